import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Update } from "grammy/types";
import type { Logger } from "../logger.js";
import type { Health } from "./readiness.js";
import { checkUpdate } from "./update-check.js";

export const WEBHOOK_PATH = "/telegram/webhook";
// Telegram's updates are a few KB; anything this large is not from Telegram.
export const MAX_BODY_BYTES = 1024 * 1024;

export type HttpServerDeps = {
  /** What GET /healthz answers (see readiness.ts). */
  health(): Promise<Health>;
  logger: Logger;
  /**
   * Present in webhook mode only. `ingest` stores the update and throws only when it could not
   * (Telegram is then answered 500, to deliver it again).
   */
  webhook?: { secret: string; ingest(update: Update): Promise<unknown> };
  metrics: {
    /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>`. */
    token: string | undefined;
    contentType: string;
    render(): Promise<string>;
  };
};

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
  });
  res.end(json);
}

async function handleMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: HttpServerDeps["metrics"],
): Promise<void> {
  if (metrics.token !== undefined) {
    const [scheme, token] = (req.headers.authorization ?? "").split(" ", 2);
    if (scheme?.toLowerCase() !== "bearer" || !sameSecret(token, metrics.token)) {
      res.setHeader("www-authenticate", 'Bearer realm="metrics"');
      send(res, 401, { error: "GET /metrics needs Authorization: Bearer <METRICS_TOKEN>" });
      return;
    }
  }
  const body = await metrics.render();
  res.writeHead(200, {
    "content-type": metrics.contentType,
    "content-length": Buffer.byteLength(body),
  });
  res.end(req.method === "HEAD" ? undefined : body);
}

function sameSecret(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

// Telegram's updates nest a dozen levels at most. JSON.parse takes any depth, but the inbox's
// JSON.stringify recurses and overflows the stack on a body thousands of levels deep, which
// would answer 500 ("retry") for a body that can never be stored.
const MAX_JSON_DEPTH = 64;

function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    if (typeof item.value !== "object" || item.value === null) continue;
    if (item.depth >= limit) return true;
    for (const child of Object.values(item.value))
      pending.push({ value: child, depth: item.depth + 1 });
  }
  return false;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function handleWebhook(
  req: IncomingMessage,
  res: ServerResponse,
  webhook: NonNullable<HttpServerDeps["webhook"]>,
  logger: Logger,
): Promise<void> {
  if (!sameSecret(req.headers["x-telegram-bot-api-secret-token"], webhook.secret)) {
    send(res, 401, { error: "missing or wrong X-Telegram-Bot-Api-Secret-Token" });
    return;
  }
  let raw: string;
  try {
    raw = await readBody(req);
  } catch (error) {
    if (error instanceof BodyTooLarge) {
      send(res, 413, { error: `body larger than ${MAX_BODY_BYTES} bytes` });
      req.resume();
      return;
    }
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    send(res, 400, { error: "body is not JSON" });
    return;
  }
  if (nestsDeeperThan(json, MAX_JSON_DEPTH)) {
    send(res, 400, {
      error: `body nests deeper than ${MAX_JSON_DEPTH} levels; not a Telegram update`,
    });
    return;
  }
  const checked = checkUpdate(json);
  if (checked.kind === "invalid") {
    send(res, 400, { error: "body is not a Telegram update (needs a numeric update_id)" });
    return;
  }
  if (checked.kind === "odd") {
    logger.info(
      { update_id: checked.updateId, field: checked.field, problem: checked.problem },
      "skipping an update in a shape Telegram does not send",
    );
    send(res, 200, { ok: true, skipped: `${checked.field} ${checked.problem}` });
    return;
  }
  const { update } = checked;
  try {
    await webhook.ingest(update);
    send(res, 200, { ok: true });
  } catch (error) {
    // Not stored: a 500 makes Telegram deliver the update again later.
    logger.error({ err: error, update_id: update.update_id }, "could not store an update");
    send(res, 500, { error: "could not store the update; Telegram will retry" });
  }
}

/** /healthz and /metrics in every mode; /telegram/webhook when a webhook is configured. */
export function createHttpServer(deps: HttpServerDeps): Server {
  return createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const route = async () => {
      if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
        const health = await deps.health();
        send(res, health.ready ? 200 : 503, { status: health.status });
      } else if (path === "/metrics" && (req.method === "GET" || req.method === "HEAD")) {
        await handleMetrics(req, res, deps.metrics);
      } else if (path === WEBHOOK_PATH && deps.webhook) {
        if (req.method !== "POST") send(res, 405, { error: "use POST" });
        else await handleWebhook(req, res, deps.webhook, deps.logger);
      } else {
        send(res, 404, { error: "not found" });
      }
    };
    route().catch((error: unknown) => {
      deps.logger.error({ err: error }, "HTTP request failed");
      if (!res.headersSent) send(res, 500, { error: "internal error" });
      else res.destroy();
    });
  });
}
