import { existsSync, readFileSync, statSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_MODEL_RESPONSE_BYTES } from "../../src/agent/response-cap.js";
import { call, text } from "../fakes/gemini.js";
import { eventually, type ServiceWorld, startWorld } from "../helpers/service-process.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

/** The database file and its write-ahead log, where new pages go first. */
const databaseBytes = (file: string) =>
  [file, `${file}-wal`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);

const peakRssMb = (pid: number) =>
  Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

describe("a 100 MB answer from Gemini (or a proxy at GEMINI_BASE_URL)", () => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startWorld({ env: allowBuiltinTools() });
  });
  afterAll(() => w.close());

  it("is refused with a message, stored nowhere, and never held in memory whole", async () => {
    const databaseFile = w.db.url.slice("sqlite:".length);
    const sizeBefore = databaseBytes(databaseFile);
    w.gemini.script(
      call("write_file", { path: "big.txt", content: "x".repeat(100 * 1024 * 1024) }),
    );
    const chat = await w.say("write a big file");
    const told = await eventually(() =>
      w.telegram.sent.find((m) => m.plain_text.startsWith("Gemini's answer was larger than")),
    );
    const capMb = MAX_MODEL_RESPONSE_BYTES / 1024 / 1024;
    expect(told.plain_text).toContain(`the ${capMb} MB I can keep, so I dropped it`);
    expect(chat).toBeGreaterThan(0);
    expect(peakRssMb(w.service.proc.pid as number)).toBeLessThan(400);
    // The user's message is stored (a few pages), the answer is not.
    expect(databaseBytes(databaseFile) - sizeBefore).toBeLessThan(1024 * 1024);
    w.gemini.script(text("small again"));
    await w.say("and now?");
    await eventually(() => w.telegram.sent.find((m) => m.plain_text === "small again"));
  });
});
