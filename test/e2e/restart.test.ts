import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { call, type RecordedRequest, text } from "../fakes/gemini.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

const plainTexts = (w: ServiceWorld) => w.telegram.sent.map((m) => m.plain_text);
const requestText = (r: RecordedRequest | undefined) => JSON.stringify(r?.body.contents ?? []);

describe("Telegram service across restarts", () => {
  let w: ServiceWorld;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("starts a second service on the same SQLite file only once the first has stopped", async () => {
    w = await startWorld();
    const logs: Record<string, unknown>[] = [];
    const starting = w.start({}, logs);
    await eventually(() =>
      logs.some(
        (l) =>
          l.msg === "another Koroku service holds this SQLite database; waiting for it to stop",
      ),
    );
    // Waiting, it has not even asked Telegram who it is.
    expect(w.telegram.calls.filter((c) => c.method === "getMe")).toHaveLength(1);
    w.service.proc.kill("SIGTERM");
    expect(await w.service.exited).toBe(0);
    w.service = await starting;
    w.gemini.script(text("the second one answers"));
    await w.say("hello?");
    await eventually(() => plainTexts(w).includes("the second one answers"));
  });

  it("shuts down gracefully on SIGTERM after finishing the running turn, and remembers after a restart", async () => {
    w = await startWorld();
    w.gemini.script({ ...text("noted: 42"), delayMs: 400 });
    await w.say("remember the number 42");
    await eventually(() => w.gemini.requests.length === 1);
    const first = w.service;
    w.service.proc.kill("SIGTERM");
    expect(await w.service.exited).toBe(0);
    expect(plainTexts(w)).toContain("noted: 42");

    const second = await w.start();
    w.service = second;
    w.gemini.script(text("it was 42"));
    await w.say("what was the number?");
    await eventually(() => plainTexts(w).includes("it was 42"));
    const diagnostics = JSON.stringify({
      requests: w.gemini.requests.map((r) => r.body.contents),
      first: first.logs,
      second: second.logs,
    });
    expect(requestText(w.gemini.requests.at(-1)), diagnostics).toContain("remember the number 42");
    await w.say("/history");
    const history = await eventually(() => plainTexts(w).find((t) => t.startsWith("You:")));
    expect(history).toContain("Koroku: noted: 42");
  });

  it("answers exactly once after kill -9 during the model call", async () => {
    w = await startWorld();
    w.gemini.script({ ...text("never delivered"), delayMs: 30_000 });
    await w.say("slow question");
    await eventually(() => w.gemini.requests.length === 1);
    w.service.proc.kill("SIGKILL");
    await w.service.exited;

    w.gemini.script(text("answer after restart"));
    w.service = await w.start();
    await eventually(() => plainTexts(w).includes("answer after restart"));
    const retried = w.gemini.requests.at(-1);
    // The user message was stored once: it appears once in what Gemini sees.
    expect(requestText(retried).match(/slow question/g)).toHaveLength(1);
    await w.say("/history");
    const history = await eventually(() => plainTexts(w).find((t) => t.startsWith("You:")));
    expect(history.match(/You: slow question/g)).toHaveLength(1);
    expect(plainTexts(w).filter((t) => t === "answer after restart")).toHaveLength(1);
    expect(plainTexts(w)).not.toContain("never delivered");
  });

  it("completes a tool call interrupted by kill -9 and answers after the restart", async () => {
    w = await startWorld({ env: { ENABLE_SHELL_TOOL: "true", ...allowBuiltinTools() } });
    w.gemini.script(call("run_command", { command: "sleep 30" }));
    await w.say("run the long job");
    await eventually(() => w.gemini.requests.length === 1);
    // The model's function call is stored before the tool runs: kill once it is in the database.
    const db = new SQLite((w.db.target as { path: string }).path, { readonly: true });
    const stored = db.prepare(
      "select count(*) as n from messages where event_json like '%run_command%'",
    );
    await eventually(() => (stored.get() as { n: number }).n > 0);
    db.close();
    w.service.proc.kill("SIGKILL");
    await w.service.exited;

    w.gemini.script(text("the job was interrupted"));
    w.service = await w.start();
    await eventually(() => plainTexts(w).includes("the job was interrupted"));
    const after = requestText(w.gemini.requests.at(-1));
    expect(after).toContain("interrupted: Koroku restarted");
  });

  it("deletes finished updates past the retention when it starts, and keeps the rest", async () => {
    w = await startWorld();
    w.gemini.script(text("first answer"));
    await w.say("first");
    await eventually(() => plainTexts(w).includes("first answer"));
    w.gemini.script(text("second answer"));
    await w.say("second");
    await eventually(() => plainTexts(w).includes("second answer"));
    w.service.proc.kill("SIGTERM");
    await w.service.exited;
    const db = new SQLite((w.db.target as { path: string }).path);
    const rows = () =>
      (
        db.prepare("select update_id from inbox order by update_id").all() as {
          update_id: number;
        }[]
      ).map((r) => r.update_id);
    const [old, recent] = rows();
    db.prepare("update inbox set finished_at = ? where update_id = ?").run(
      "2026-01-01T00:00:00.000Z",
      old,
    );

    w.service = await w.start();
    await eventually(() => w.service.logs.some((l) => l.msg === "deleted finished inbox updates"));
    expect(rows()).toEqual([recent]);
    db.close();
  });

  it("works in long-polling mode", async () => {
    w = await startWorld({ webhook: false });
    expect(w.telegram.calls.some((c) => c.method === "deleteWebhook")).toBe(true);
    w.gemini.script(text("polled answer"));
    w.telegram.pushText({ text: "hello by polling", userId: ALLOWED_USER });
    await eventually(() => plainTexts(w).includes("polled answer"));
    const before = w.gemini.requests.length;
    w.telegram.pushText({ text: "second", userId: ALLOWED_USER });
    await eventually(() => plainTexts(w).includes("ok"));
    expect(w.gemini.requests.length).toBe(before + 1);
    w.service.proc.kill("SIGTERM");
    expect(await w.service.exited).toBe(0);
  });

  it("answers in groups only when mentioned or replied to", async () => {
    w = await startWorld();
    const group = -100777;
    const mention = (id: number, t: string, withMention: boolean) => ({
      update_id: id,
      message: {
        message_id: id,
        date: 1,
        chat: { id: group, type: "supergroup", title: "G" },
        from: { id: ALLOWED_USER, is_bot: false, first_name: "Ann" },
        text: t,
        ...(withMention ? { entities: [{ type: "mention", offset: 0, length: 16 }] } : {}),
      },
    });
    w.gemini.script(text("group answer"));
    await w.post(mention(w.nextUpdateId(), "just chatting", false));
    await w.post(mention(w.nextUpdateId(), "@koroku_test_bot what is up?", true));
    await eventually(() => plainTexts(w).includes("group answer"));
    expect(w.gemini.requests).toHaveLength(1);
    expect(requestText(w.gemini.requests[0])).toContain("[Ann] what is up?");
  });
});
