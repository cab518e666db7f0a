import { afterEach, describe, expect, it } from "vitest";
import { GeminiRefusedError } from "../../src/agent/gemini-errors.js";
import { putAttachment } from "../../src/session/attachments.js";
import type { MediaPart } from "../../src/session/events.js";
import { historyLines } from "../../src/session/history-view.js";
import { REFUSED_WORDS } from "../../src/session/refusals.js";
import {
  call,
  type RecordedRequest,
  status,
  text,
  unprocessableMessage,
  withBytes,
  withText,
} from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { type Harness, startHarness } from "../helpers/harness.js";

const IMAGE_REFUSAL = unprocessableMessage("image/jpeg");
const sent = (request: RecordedRequest | undefined) => JSON.stringify(request?.body.contents);
const texts = (request: RecordedRequest | undefined) =>
  (request?.body.contents ?? []).flatMap((c) => (c.parts ?? []).flatMap((p) => p.text ?? []));
const refusal = (run: Promise<unknown>) =>
  run.then(
    () => {
      throw new Error("the turn was answered");
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(GeminiRefusedError);
      return error as GeminiRefusedError;
    },
  );

describe.each(DATABASE_KINDS)("input Gemini refuses, on %s", (kind) => {
  let h: Harness;
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  async function stored(chatId: string, bytes: Buffer, media: MediaPart["media"], mime: string) {
    const attachment = await putAttachment(h.app.database.db, chatId, { bytes, mimeType: mime });
    return { kind: "media", media, ...attachment } as MediaPart;
  }

  it("keeps a photo Gemini cannot process, shows it unanswered, and answers the next message without it", async () => {
    h = await startHarness({ kind });
    const bad = Buffer.alloc(40_000, 3);
    h.fake.cannotProcess(withBytes(bad));
    const photo = await stored("p1", bad, "photo", "image/jpeg");
    const error = await refusal(
      h.app.agent.runTurn("p1", { text: "what is this?", media: [photo], updateId: 1 }),
    );
    expect(error.inputRefused).toBe(true);
    expect(error.userMessage).toBe(`Gemini refused the request: ${IMAGE_REFUSAL}`);
    // A run of the same update after a crash tells the refusal again, without asking Gemini.
    const restarted = await h.restart();
    const again = await refusal(
      restarted.agent.runTurn("p1", { text: "what is this?", media: [photo], updateId: 1 }),
    );
    expect(again.reason).toBe(IMAGE_REFUSAL);
    expect(h.fake.requests).toHaveLength(1);

    h.fake.script(text("a pity; hello"), text("still here"));
    expect((await h.app.agent.runTurn("p1", { text: "hello?", updateId: 2 })).text).toBe(
      "a pity; hello",
    );
    expect((await h.app.agent.runTurn("p1", { text: "and now?", updateId: 3 })).text).toBe(
      "still here",
    );
    expect(h.fake.unprocessed).toHaveLength(1);
    const next = h.fake.requests[1];
    expect(sent(next)).not.toContain("inlineData");
    expect(texts(next)).toContain("[a photo Gemini could not read]");
    // The caption stays: a file is what Gemini refuses.
    expect(texts(next)).toContain("what is this?");
    expect(next?.body.contents.map((c) => c.role)).toEqual(["user"]);
    // The third request starts with the second one's bytes (Gemini's prompt cache).
    const third = h.fake.requests[2]?.body.contents ?? [];
    expect(JSON.stringify(third.slice(0, 1))).toBe(JSON.stringify(next?.body.contents));

    const lines = historyLines(await h.app.store.lastTurns("p1", 5));
    expect(lines.slice(0, 2)).toEqual([
      { kind: "user", text: "📷 photo «what is this?»" },
      { kind: "assistant", text: `⚠ Not answered: Gemini refused the request (${IMAGE_REFUSAL})` },
    ]);
  });

  it("answers the next text message after Gemini refused a text one for good", async () => {
    h = await startHarness({ kind });
    h.fake.cannotProcess(withText("poison pill"));
    await refusal(h.app.agent.runTurn("t1", { text: "a poison pill" }));
    h.fake.script(text("answered"));
    expect((await h.app.agent.runTurn("t1", { text: "hello" })).text).toBe("answered");
    expect(sent(h.fake.requests[1])).not.toContain("poison pill");
    expect(texts(h.fake.requests[1])).toContain(REFUSED_WORDS);
  });

  it("leaves out what a turn added after its message when a later request was refused", async () => {
    h = await startHarness({ kind });
    h.fake.script(
      call("get_current_time"),
      status(400, "Request contains an invalid argument."),
      text("fine"),
    );
    await refusal(h.app.agent.runTurn("l1", { text: "what time is it?" }));
    expect((await h.app.agent.runTurn("l1", { text: "well?" })).text).toBe("fine");
    const last = h.fake.requests[2];
    expect(sent(last)).not.toContain("functionCall");
    expect(sent(last)).not.toContain("functionResponse");
    // Gemini took the message itself: it goes as it was.
    expect(texts(last)).toContain("what time is it?");
    expect(texts(last)).toContain("well?");
  });

  it("neither sends a refused voice note again nor transcribes it", async () => {
    h = await startHarness({ kind });
    const bad = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(2_000, 1)]);
    h.fake.cannotProcess(withBytes(bad));
    const voice = { ...(await stored("v1", bad, "voice", "audio/ogg")), duration: 3 };
    await refusal(h.app.agent.runTurn("v1", { text: "", media: [voice] }));
    h.fake.script(text("ok"));
    await h.app.agent.runTurn("v1", { text: "did you hear it?" });
    expect(texts(h.fake.requests[1])).toContain("[a voice note Gemini could not read]");
    expect(await h.app.transcriber.transcribePending("v1")).toBe(0);
    expect(h.fake.requests).toHaveLength(2);
  });

  it("does not set a message aside when Gemini refuses the API key", async () => {
    h = await startHarness({ kind, gemini: { apiKey: "another-key" } });
    const error = await refusal(h.app.agent.runTurn("k1", { text: "hello" }));
    expect(error.inputRefused).toBe(false);
    expect(h.fake.rejections.splice(0)).toHaveLength(1);
    const events = (await h.app.store.loadContext("k1")).events;
    expect(events.map((e) => e.event.role)).toEqual(["user"]);
  });
});
