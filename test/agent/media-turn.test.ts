import { afterEach, describe, expect, it } from "vitest";
import { INLINE_MEDIA_BUDGET_BYTES } from "../../src/agent/request-media.js";
import { putAttachment } from "../../src/session/attachments.js";
import type { MediaPart } from "../../src/session/events.js";
import { historyLines } from "../../src/session/history-view.js";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";

const inlineParts = (request: RecordedRequest | undefined) =>
  (request?.body.contents ?? []).flatMap((c) => (c.parts ?? []).filter((p) => p.inlineData));

describe.each(DATABASE_KINDS)("media in turns on %s", (kind) => {
  let h: Harness;
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  async function photo(chatId: string, seed: number, size = 50_000): Promise<MediaPart> {
    const bytes = Buffer.alloc(size, seed);
    const stored = await putAttachment(h.app.database.db, chatId, {
      bytes,
      mimeType: "image/jpeg",
    });
    return { kind: "media", media: "photo", ...stored };
  }

  it("sends a photo inline, byte for byte, and again after a restart", async () => {
    h = await startHarness({ kind });
    const part = await photo("p1", 7);
    h.fake.script(text("a cat"), text("still a cat"));
    await h.app.agent.runTurn("p1", { text: "what is this?", media: [part] });
    const expected = Buffer.alloc(50_000, 7).toString("base64");
    expect(inlineParts(h.fake.requests[0])).toEqual([
      { inlineData: { mimeType: "image/jpeg", data: expected } },
    ]);
    const restarted = await h.restart();
    // The parsed context holds the reference only; the bytes come from the database.
    const context = await restarted.store.loadContext("p1");
    expect(JSON.stringify(context)).not.toContain(expected.slice(0, 100));
    await restarted.agent.runTurn("p1", { text: "and now?" });
    expect(inlineParts(h.fake.requests[1])).toEqual([
      { inlineData: { mimeType: "image/jpeg", data: expected } },
    ]);
    const lines = historyLines(await restarted.store.lastTurns("p1", 5));
    expect(lines[0]).toEqual({ kind: "user", text: "📷 photo «what is this?»" });
  });

  it("tells the summary model of the media in the turns it summarises", async () => {
    h = await startHarness({ kind });
    const part = { ...(await photo("p3", 5)), name: "receipt.jpg" };
    h.fake.script(text("a receipt for 12 EUR"), text("noted"));
    await h.app.agent.runTurn("p3", { text: "keep this", media: [part] });
    await h.app.agent.runTurn("p3", { text: "thanks" });
    h.fake.scriptFor(SUMMARY_MODEL, text("The user sent a photo of a receipt for 12 EUR."));
    const outcome = await h.app.compactor.compact("p3");
    expect(outcome.status).toBe("compacted");
    const asked = h.fake.requests.find((r) => r.model === SUMMARY_MODEL);
    const prompt = JSON.stringify(asked?.body);
    expect(prompt).toContain("User sent [photo, image/jpeg, 49 KB]");
    expect(prompt).toContain("Mention every photo, voice note, video and document");
    expect(inlineParts(asked)).toEqual([]);
  });

  it("describes the oldest media in words once the request's inline budget is spent", async () => {
    h = await startHarness({ kind });
    const size = Math.floor(INLINE_MEDIA_BUDGET_BYTES / 2) - 1000;
    const parts = [
      await photo("p2", 1, size),
      await photo("p2", 2, size),
      await photo("p2", 3, size),
    ];
    h.fake.script(text("one"), text("two"), text("three"));
    for (const part of parts) await h.app.agent.runTurn("p2", { text: "", media: [part] });
    const last = h.fake.requests[2];
    expect(inlineParts(last)).toHaveLength(2);
    const first = last?.body.contents[0]?.parts?.[0];
    expect(first?.text).toMatch(/^\[photo, image\/jpeg, 10\.0 MB\]$/);
  });
});
