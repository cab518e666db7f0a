import { afterEach, describe, expect, it } from "vitest";
import {
  INLINE_BUDGET_BYTES,
  INLINE_PART_MAX_BYTES,
  REUPLOAD_MARGIN_MS,
} from "../../src/agent/request-media.js";
import { putAttachment } from "../../src/session/attachments.js";
import type { MediaPart } from "../../src/session/events.js";
import { historyLines } from "../../src/session/history-view.js";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";
import { isStamp } from "../helpers/stamps.js";

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

  /** Each request's media parts, as sent: inline data, a file uri, or words. */
  const mediaOf = (request: RecordedRequest | undefined) =>
    (request?.body.contents ?? []).flatMap((c) =>
      (c.parts ?? []).flatMap((p) => {
        if (p.inlineData) return [`inline ${p.inlineData.data?.length}`];
        if (p.fileData) return [`file ${p.fileData.fileUri}`];
        return p.text?.startsWith("[") && !isStamp(p) ? [`words ${p.text}`] : [];
      }),
    );

  it("uploads a file past the inline rule once and names it by uri, after a restart too", async () => {
    h = await startHarness({ kind });
    const big = INLINE_PART_MAX_BYTES + 1;
    const part = await photo("f1", 9, big);
    h.fake.script(text("a big photo"), text("yes"), text("still"));
    await h.app.agent.runTurn("f1", { text: "look", media: [part] });
    await h.app.agent.runTurn("f1", { text: "again?" });
    const restarted = await h.restart();
    await restarted.agent.runTurn("f1", { text: "and after a restart?" });
    expect(h.fake.files.uploaded).toHaveLength(1);
    const file = h.fake.files.files.get(h.fake.files.uploaded[0]?.name ?? "");
    expect(file?.bytes.equals(Buffer.alloc(big, 9))).toBe(true);
    for (const request of h.fake.requests) {
      expect(mediaOf(request)).toEqual([`file ${file?.uri}`]);
      expect(inlineParts(request)).toEqual([]);
    }
  });

  it("keeps every part's form as newer media arrive: the oldest 2 MB inline, the rest by uri", async () => {
    h = await startHarness({ kind });
    const MB = 1024 * 1024;
    // The sizes below are chosen around these two.
    expect([INLINE_PART_MAX_BYTES, INLINE_BUDGET_BYTES]).toEqual([1 * MB, 2 * MB]);
    const turns = [
      [0.5 * MB, 0.5 * MB, 0.5 * MB],
      // Past the size rule, then the last one the budget takes.
      [1.5 * MB, 0.5 * MB],
      // Small, but the budget is spent.
      [0.25 * MB],
    ];
    let seed = 0;
    for (const sizes of turns) {
      const media = [];
      for (const size of sizes) media.push(await photo("f2", ++seed, size));
      h.fake.script(text(`${sizes.length} photos`));
      await h.app.agent.runTurn("f2", { text: "", media });
    }
    const forms = mediaOf(h.fake.requests.at(-1)).map((m) => m.split(" ")[0]);
    expect(forms).toEqual(["inline", "inline", "inline", "file", "inline", "file"]);
    // Each request begins with the one before it, media and all: a stable prefix for the cache.
    for (let i = 1; i < h.fake.requests.length; i++) {
      const before = h.fake.requests[i - 1]?.body.contents ?? [];
      const after = h.fake.requests[i]?.body.contents ?? [];
      expect(after.slice(0, before.length)).toEqual(before);
    }
    expect(h.fake.files.uploaded.map((f) => f.size)).toEqual([1.5 * MB, 0.25 * MB]);
  });

  it("uploads again a file about to expire", async () => {
    h = await startHarness({ kind, gemini: { files: { lifetimeMs: REUPLOAD_MARGIN_MS / 2 } } });
    const part = await photo("f3", 3, INLINE_PART_MAX_BYTES + 10);
    h.fake.script(text("one"), text("two"));
    await h.app.agent.runTurn("f3", { text: "", media: [part] });
    // Its expiry is within the margin at the next turn: uploaded again before the request.
    await h.app.agent.runTurn("f3", { text: "again" });
    expect(h.fake.files.uploaded).toHaveLength(2);
    expect(h.fake.rejections).toEqual([]);
    expect(mediaOf(h.fake.requests[1])).toEqual([
      `file ${h.fake.files.files.get(h.fake.files.uploaded[1]?.name ?? "")?.uri}`,
    ]);
  });

  it("uploads again a file Gemini lost, and sends the request anew", async () => {
    h = await startHarness({ kind });
    const part = await photo("f4", 4, INLINE_PART_MAX_BYTES + 10);
    h.fake.script(text("one"), text("two"));
    await h.app.agent.runTurn("f4", { text: "", media: [part] });
    h.fake.files.expire();
    const result = await h.app.agent.runTurn("f4", { text: "still there?" });
    expect(result.text).toBe("two");
    expect(h.fake.files.uploaded).toHaveLength(2);
    expect(h.fake.rejections.map((r) => r.status)).toEqual([403]);
    h.fake.rejections.length = 0;
    const [first, refused, resent] = h.fake.requests.map(mediaOf);
    expect(refused).toEqual(first);
    expect(resent).not.toEqual(first);
    expect(resent?.[0]).toMatch(/^file /);
  });

  it("waits for Gemini to process a video, and describes one it could not process", async () => {
    h = await startHarness({ kind });
    const video = async (chatId: string, seed: number): Promise<MediaPart> => {
      const stored = await putAttachment(h.app.database.db, chatId, {
        bytes: Buffer.alloc(INLINE_PART_MAX_BYTES + 1, seed),
        mimeType: "video/mp4",
      });
      return { kind: "media", media: "video", ...stored, duration: 3 };
    };
    h.fake.script(text("a video"), text("a broken video"), text("still broken"));
    await h.app.agent.runTurn("v1", { text: "", media: [await video("v1", 1)] });
    expect(mediaOf(h.fake.requests[0])[0]).toMatch(/^file /);
    h.fake.files.failProcessing();
    await h.app.agent.runTurn("v2", { text: "", media: [await video("v2", 2)] });
    await h.app.agent.runTurn("v2", { text: "and?" });
    expect(mediaOf(h.fake.requests[1])).toEqual(["words [video 0:03, video/mp4, 1.0 MB]"]);
    expect(mediaOf(h.fake.requests[2])).toEqual(["words [video 0:03, video/mp4, 1.0 MB]"]);
    // Not uploaded again on the next turn: Gemini would fail it the same way.
    expect(h.fake.files.uploaded).toHaveLength(2);
  });
  it("answers about a video Gemini takes too long to process, and does not upload it every turn", async () => {
    h = await startHarness({
      kind,
      gemini: { files: { processingGets: 1e6 } },
      maxProcessingMs: 50,
    });
    const stored = await putAttachment(h.app.database.db, "v4", {
      bytes: Buffer.alloc(INLINE_PART_MAX_BYTES + 1, 4),
      mimeType: "video/mp4",
    });
    const video: MediaPart = { kind: "media", media: "video", ...stored, duration: 3 };
    h.fake.script(text("I cannot watch it yet"), text("still not"));
    expect((await h.app.agent.runTurn("v4", { text: "watch", media: [video] })).text).toBe(
      "I cannot watch it yet",
    );
    expect((await h.app.agent.runTurn("v4", { text: "and now?" })).text).toBe("still not");
    expect(mediaOf(h.fake.requests[1])).toEqual(["words [video 0:03, video/mp4, 1.0 MB]"]);
    expect(h.fake.files.uploaded).toHaveLength(1);
    // An hour on, the upload is asked after, not made again: still processing, then ready.
    const anHourOn = () =>
      h.app.database.db
        .updateTable("gemini_files")
        .set({ expires_at: new Date(Date.now() - 1).toISOString() })
        .where("sha256", "=", stored.sha256)
        .execute();
    await anHourOn();
    h.fake.script(text("not yet"), text("a video at last"));
    await h.app.agent.runTurn("v4", { text: "now?" });
    expect(mediaOf(h.fake.requests[2])).toEqual(["words [video 0:03, video/mp4, 1.0 MB]"]);
    const file = h.fake.files.files.get(h.fake.files.uploaded[0]?.name ?? "");
    if (file) file.state = "ACTIVE";
    await anHourOn();
    await h.app.agent.runTurn("v4", { text: "and now?" });
    expect(mediaOf(h.fake.requests[3])).toEqual([`file ${file?.uri}`]);
    expect(h.fake.files.uploaded).toHaveLength(1);
  });

  it("ends a turn stopped while Gemini processes its video at once; the next turn uses the upload", async () => {
    h = await startHarness({ kind, gemini: { files: { processingGets: 1_000 } } });
    const stored = await putAttachment(h.app.database.db, "v3", {
      bytes: Buffer.alloc(INLINE_PART_MAX_BYTES + 1, 3),
      mimeType: "video/mp4",
    });
    const video: MediaPart = { kind: "media", media: "video", ...stored, duration: 3 };
    const stop = new AbortController();
    const turn = h.app.agent.runTurn("v3", { text: "watch", media: [video], stop: stop.signal });
    await expect.poll(() => h.fake.files.uploaded.length, { timeout: 30_000 }).toBe(1);
    stop.abort();
    expect((await turn).stopped).toBe(true);
    const file = h.fake.files.files.get(h.fake.files.uploaded[0]?.name ?? "");
    // The turn did not wait for it: Gemini is still processing the video.
    expect(file?.state).toBe("PROCESSING");
    expect(h.fake.requests).toEqual([]);
    // The next turn, at once, waits for that upload rather than make another.
    h.fake.script(text("a video"));
    await h.app.agent.runTurn("v3", { text: "and now?" });
    expect(mediaOf(h.fake.requests[0])).toEqual([`file ${file?.uri}`]);
    expect(h.fake.files.uploaded).toHaveLength(1);
  });
});
