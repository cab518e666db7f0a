import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { status } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type RunningService,
  type ServiceWorld,
  startWorld,
  WEBHOOK_SECRET,
} from "../helpers/service-process.js";

const DB_PASSWORD = "db-pass-4711";
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
