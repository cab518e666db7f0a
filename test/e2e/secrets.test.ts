import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { status, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import {
  ALLOWED_USER,
  eventually,
  type RunningService,
  type ServiceWorld,
  startWorld,
  WEBHOOK_SECRET,
} from "../helpers/service-process.js";

const DB_PASSWORD = "db-pass-4711";

/** A secret as it may come back: percent-encoded (a URL), and split by a zero-width space. */
const disguises = (secret: string): string[] => [
  encodeURIComponent(secret),
  `${secret.slice(0, 6)}\u200b${secret.slice(6)}`,
];
const METRICS_TOKEN = "metrics-token-0815";

describe("secrets never reach a chat", () => {
  let w: ServiceWorld;
  let service: RunningService;
  beforeAll(async () => {
    w = await startWorld({ kind: "postgres" });
    // Trust authentication ignores the password, so the database can be reached with one given.
    const url = w.db.url.replace("postgres@", `postgres:${DB_PASSWORD}@`);
    expect(url).toContain(DB_PASSWORD);
    w.service.proc.kill("SIGTERM");
    await w.service.exited;
    service = await w.start({ DATABASE_URL: url, METRICS_TOKEN: METRICS_TOKEN });
  });
  afterAll(() => w?.close());

  it("takes every configured secret out of a Gemini error shown to the user", async () => {
    const secrets = [
      w.env.GEMINI_API_KEY,
      w.telegram.token,
      ...disguises(w.telegram.token),
      WEBHOOK_SECRET,
      DB_PASSWORD,
      METRICS_TOKEN,
    ];
    w.gemini.script(status(400, `the proxy echoes what it saw: ${secrets.join(" | ")}`));
    const id = w.nextUpdateId();
    const update = buildTextUpdate({
      updateId: id,
      messageId: id,
      text: "hi",
      userId: ALLOWED_USER,
    });
    expect((await w.post(update, { service })).status).toBe(200);
    const told = await eventually(() =>
      w.telegram.sent.find((m) => m.plain_text.startsWith("Gemini refused the request")),
    );
    expect(told.plain_text).toContain("the proxy echoes what it saw:");
    for (const secret of secrets) expect(told.text).not.toContain(secret);
  });
});

describe.each(DATABASE_KINDS)("secrets at rest on %s", (kind) => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startWorld({ kind });
  });
  afterAll(() => w?.close());

  it("keeps a Telegram error that echoes the bot token without it, as the log does", async () => {
    const token = w.telegram.token;
    // A flood wait past grammY's cap goes back to the inbox, which stores Telegram's text.
    w.telegram.failNext("sendMessage", {
      error_code: 429,
      retry_after: 60,
      description: `Too Many Requests: retry after 60 (bot ${token}, ${disguises(token).join(", ")})`,
    });
    w.gemini.script(text("an answer"));
    const id = await w.say("hello");
    const handle = openDatabase(w.db.target);
    try {
      const stored = await eventually(async () => {
        const row = await handle.db
          .selectFrom("inbox")
          .select("error")
          .where("update_id", "=", id)
          .executeTakeFirst();
        return row?.error ?? undefined;
      });
      expect(stored).toContain(
        "Too Many Requests: retry after 60 (bot [REDACTED], [REDACTED], [REDACTED])",
      );
      // The line comes through the service's stdout, which may be read after the row is seen.
      const logged = await eventually(() => {
        const lines = w.service.logs.filter(
          (line) => line.msg === "update failed; it will run again",
        );
        return lines.length > 0 ? JSON.stringify(lines) : undefined;
      });
      expect(logged).toContain("[REDACTED], [REDACTED], [REDACTED]");
      for (const form of [token, ...disguises(token)]) {
        expect(stored).not.toContain(form);
        expect(logged).not.toContain(form);
      }
    } finally {
      await handle.close();
    }
  });
});
