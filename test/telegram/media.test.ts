import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_TRANSCRIPT_CHARS } from "../../src/agent/transcription.js";
import { sha256Hex } from "../../src/session/attachments.js";
import { historyLines } from "../../src/session/history-view.js";
import { type RecordedRequest, status, text } from "../fakes/gemini.js";
import { botPerFile, runPrivateMessage } from "../helpers/bot.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { CHAT_MODEL, SUMMARY_MODEL } from "../helpers/harness.js";
import { isoMedia, oggAudio } from "../helpers/media-bytes.js";
import { wordsOf } from "../helpers/stamps.js";
import { toolContext } from "../helpers/tool-context.js";

const USER = 6160;
const MAX_BYTES = 64 * 1024;

/** A small but whole JPEG / PNG / PDF: what the content checks want to see. */
const jpeg = (seed: number, size = 2_000) =>
  Buffer.concat([
    Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
    Buffer.alloc(size, seed),
    Buffer.from([0xff, 0xd9]),
  ]);
const png = () =>
  Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.alloc(100, 1),
    Buffer.from("IEND\xaeB`\x82", "latin1"),
  ]);
const pdf = () => Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "latin1");
const ogg = () => oggAudio();

const inlineOf = (r: RecordedRequest | undefined) =>
  (r?.body.contents.at(-1)?.parts ?? []).flatMap((p) => (p.inlineData ? [p.inlineData] : []));
const lastWords = (r: RecordedRequest | undefined) => wordsOf(r?.body.contents.at(-1)?.parts);

describe.each(DATABASE_KINDS)("media from Telegram on %s", (kind) => {
  const w = botPerFile({
    kind,
    user: USER,
    deps: (h) => ({
      media: {
        save: h.app.attachments.save,
        read: h.app.attachments.read,
        maxBytes: MAX_BYTES,
        workspaces: h.app.workspaces,
      },
    }),
  });
  let updateId = 0;
  let local: string;

  beforeAll(() => {
    local = mkdtempSync(join(tmpdir(), "koroku-local-bot-api-"));
  });
  afterAll(() => {
    rmSync(local, { recursive: true, force: true });
  });

  /** Runs a message from the user in their private chat `chat` and returns what was sent back. */
  async function send(chat: number, content: Partial<Message>, via = w.bot): Promise<string[]> {
    const before = w.telegram.sent.length;
    await runPrivateMessage(via, { update: ++updateId, chat, user: USER }, content);
    return w.telegram.sent.slice(before).map((m) => m.plain_text);
  }

  const photoSizes = (...files: { file_id: string; file_unique_id: string; file_size: number }[]) =>
    files.map((f, i) => ({ ...f, width: 90 * (i + 1), height: 90 * (i + 1) }));

  it("reads the largest photo that fits, with its caption, and stores the same photo once", async () => {
    const small = w.telegram.addFile(jpeg(1, 500));
    const large = w.telegram.addFile(jpeg(2, 20_000));
    const huge = { file_id: "too-big", file_unique_id: "u", file_size: MAX_BYTES + 1 };
    w.h.fake.script(text("a red square"), text("the same square"));
    const sizes = photoSizes(small, large, huge);
    expect(await send(USER, { photo: sizes, caption: "what is it?" })).toEqual(["a red square"]);
    const request = w.h.fake.requests.at(-1);
    expect(inlineOf(request)).toEqual([
      { mimeType: "image/jpeg", data: jpeg(2, 20_000).toString("base64") },
    ]);
    expect(lastWords(request)).toBe("what is it?");
    await send(USER, { photo: sizes });
    const stored = await w.h.app.database.db
      .selectFrom("attachments")
      .select("sha256")
      .where("sha256", "=", sha256Hex(jpeg(2, 20_000)))
      .execute();
    expect(stored).toHaveLength(1);
    const lines = historyLines(await w.h.app.store.lastTurns(String(USER), 2));
    expect(lines.map((l) => ("text" in l ? l.text : "name" in l ? l.name : l.kind))).toEqual([
      "📷 photo «what is it?»",
      "a red square",
      "📷 photo",
      "the same square",
    ]);
  });

  it("reads voice notes, audio, video, video notes and animations as Gemini's types", async () => {
    const chat = USER + 1;
    w.h.fake.setDefault(text("heard"));
    const voice = w.telegram.addFile(ogg());
    await send(chat, { voice: { ...voice, duration: 3, mime_type: "audio/ogg" } });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("audio/ogg");
    const m4a = w.telegram.addFile(isoMedia("M4A "));
    await send(chat, {
      audio: { ...m4a, duration: 60, mime_type: "audio/x-m4a", file_name: "talk.m4a" },
    });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("audio/m4a");
    const mp4 = w.telegram.addFile(isoMedia("isom", 800, 4));
    await send(chat, { video_note: { ...mp4, length: 240, duration: 5 } });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("video/mp4");
    const gif = w.telegram.addFile(isoMedia("mp42", 900, 5));
    const animation = { ...gif, width: 1, height: 1, duration: 2, mime_type: "video/mp4" };
    await send(chat, { animation, document: { ...gif, mime_type: "video/mp4" } });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("video/mp4");
    const lines = historyLines(await w.h.app.store.lastTurns(String(chat), 10));
    expect(lines.flatMap((l) => (l.kind === "user" ? [l.text] : []))).toEqual([
      "🎤 0:03",
      "🎵 audio talk.m4a 1:00",
      "📹 video note 0:05",
      "🎞 animation 0:02",
    ]);
    w.h.fake.setDefault(text("ok"));
  });

  it("reads PDFs, images sent as files and code files, and saves them in the workspace", async () => {
    const chat = USER + 2;
    w.h.fake.setDefault(text("read it"));
    const report = w.telegram.addFile(pdf());
    await send(chat, {
      document: { ...report, file_name: "../../etc/report.pdf", mime_type: "application/pdf" },
    });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("application/pdf");
    expect(lastWords(w.h.fake.requests.at(-1))).toBe(
      "[Saved in the workspace as inbox/report.pdf]",
    );
    expect(readFileSync(join(w.h.workspaceOf(String(chat)), "inbox", "report.pdf"))).toEqual(pdf());
    // The same name again is a new file beside it, never an overwrite.
    await send(chat, { document: { ...report, file_name: "report.pdf" } });
    expect(existsSync(join(w.h.workspaceOf(String(chat)), "inbox", "report-2.pdf"))).toBe(true);
    const code = w.telegram.addFile(Buffer.from("print('hi')\n"));
    await send(chat, {
      document: { ...code, file_name: "hello.py", mime_type: "application/octet-stream" },
    });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]).toEqual({
      mimeType: "text/plain",
      data: Buffer.from("print('hi')\n").toString("base64"),
    });
    // A bare path for a name climbs nowhere either: the last piece is the name.
    const notes = w.telegram.addFile(Buffer.from("climb\n"));
    await send(chat, { document: { ...notes, file_name: "../../x", mime_type: "text/plain" } });
    expect(lastWords(w.h.fake.requests.at(-1))).toBe("[Saved in the workspace as inbox/x]");
    expect(readFileSync(join(w.h.workspaceOf(String(chat)), "inbox", "x"), "utf8")).toBe("climb\n");
    expect(existsSync(join(w.h.workspaceOf(String(chat)), "..", "x"))).toBe(false);
    expect(existsSync(join(w.h.dirs.workspace, "..", "x"))).toBe(false);
    // A PNG its sender called a JPEG goes to Gemini as what it is.
    const lying = w.telegram.addFile(png());
    await send(chat, { document: { ...lying, file_name: "shot.jpg", mime_type: "image/jpeg" } });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("image/png");
    w.h.fake.setDefault(text("ok"));
  });

  it("tells plainly what it cannot read, naming the file, and calls no model", async () => {
    const chat = USER + 3;
    const calls = w.h.fake.requests.length;
    const zip = w.telegram.addFile(Buffer.from("PK\x03\x04rest", "latin1"));
    const [refusal] = await send(chat, {
      document: { ...zip, file_name: "backup.zip", mime_type: "application/zip" },
    });
    expect(refusal).toMatch(/^I cannot read “backup\.zip” \(application\/zip\)/);
    const empty = w.telegram.addFile(Buffer.alloc(0));
    expect(await send(chat, { photo: photoSizes(empty) })).toEqual([
      "Your photo is empty (0 bytes), so there is nothing for me to read.",
    ]);
    const cut = w.telegram.addFile(jpeg(1).subarray(0, 1_000));
    const [damaged] = await send(chat, { photo: photoSizes(cut) });
    expect(damaged).toMatch(/^Your photo looks damaged/);
    const broken = w.telegram.addFile(Buffer.from("%PDF-1.4 no end", "latin1"));
    const [pdfReply] = await send(chat, { document: { ...broken, file_name: "cut.pdf" } });
    expect(pdfReply).toMatch(/^Your document “cut\.pdf” looks damaged/);
    const nothing = w.telegram.addFile(Buffer.alloc(0));
    expect(await send(chat, { document: { ...nothing, file_name: "empty.txt" } })).toEqual([
      "Your document “empty.txt” is empty (0 bytes), so there is nothing for me to read.",
    ]);
    // Types that lie: an archive calling itself a JPEG, text calling itself a PDF.
    const zipAsJpeg = w.telegram.addFile(Buffer.from("PK\x03\x04 not an image", "latin1"));
    const [fakePhoto] = await send(chat, {
      document: { ...zipAsJpeg, file_name: "photo.jpg", mime_type: "image/jpeg" },
    });
    expect(fakePhoto).toMatch(
      /^Your document “photo\.jpg” looks damaged or is not what its type says/,
    );
    const textAsPdf = w.telegram.addFile(Buffer.from("just some words\n"));
    const [fakePdf] = await send(chat, {
      document: { ...textAsPdf, file_name: "notes.pdf", mime_type: "application/pdf" },
    });
    expect(fakePdf).toMatch(/^Your document “notes\.pdf” looks damaged/);
    const binary = w.telegram.addFile(Buffer.from([0xc3, 0x28, 0xff]));
    const [notText] = await send(chat, { document: { ...binary, file_name: "notes.txt" } });
    expect(notText).toMatch(/is not plain text/);
    // Audio and video are checked by their container: an archive as a voice note, noise as MP4.
    const zipAsVoice = w.telegram.addFile(Buffer.from("PK\x03\x04 an archive", "latin1"));
    expect(
      await send(chat, { voice: { ...zipAsVoice, duration: 2, mime_type: "audio/ogg" } }),
    ).toEqual([
      "Your voice note looks damaged or is not what its type says, so I could not read it. Please send it again, or export it afresh.",
    ]);
    const noise = Buffer.from(Array.from({ length: 3_000 }, (_, i) => (i * 7_919 + 13) % 251));
    const noiseAsVideo = w.telegram.addFile(noise);
    const [badVideo] = await send(chat, {
      video: { ...noiseAsVideo, width: 1, height: 1, duration: 1, mime_type: "video/mp4" },
    });
    expect(badVideo).toMatch(/^Your video looks damaged or is not what its type says/);
    const [badAudio] = await send(chat, {
      document: { ...noiseAsVideo, file_name: "song.mp3", mime_type: "audio/mpeg" },
    });
    expect(badAudio).toMatch(/^Your document “song\.mp3” looks damaged/);
    expect(w.h.fake.requests.length).toBe(calls);
    expect(await w.h.app.store.lastTurns(String(chat), 10)).toEqual([]);
  });

  it("answers a file over the limit with the limit and what to do, without fetching it", async () => {
    const chat = USER + 4;
    const big = { file_id: "big", file_unique_id: "big", file_size: MAX_BYTES + 10 };
    const [reply] = await send(chat, { document: { ...big, file_name: "movie.mkv.pdf" } });
    expect(reply).toMatch(/larger than the 64 KB I can take/);
    expect(reply).toMatch(/send it smaller/);
    expect(reply).toMatch(/MEDIA_MAX_BYTES/);
    expect(w.telegram.calls.filter((c) => c.body.file_id === "big")).toEqual([]);
    // Telegram itself refuses files over 20 MB: said the same way, once.
    w.telegram.failNext("getFile", {
      error_code: 400,
      description: "Bad Request: file is too big",
    });
    const unsized = w.telegram.addFile(jpeg(3));
    const [refused] = await send(chat, {
      photo: [{ ...unsized, file_size: undefined, width: 1, height: 1 }] as never,
    });
    expect(refused).toMatch(/^Your photo is larger than/);
    // Sizes neither the message nor getFile gives: what is read, from Telegram's file server or
    // a local Bot API server's disk, stops at the limit.
    const calls = w.h.fake.requests.length;
    for (const where of [{}, { localDir: local }]) {
      const file = w.telegram.addFile(jpeg(5, MAX_BYTES + 1_000), { ...where, sizeUnknown: true });
      const unsized = { file_id: file.file_id, file_unique_id: file.file_unique_id };
      const [cut] = await send(chat, { document: { ...unsized, file_name: "scan.pdf" } });
      expect(cut).toMatch(/^Your document “scan\.pdf”( \(.+\))? is larger than the 64 KB I can/);
    }
    // A size only getFile gives is enough: nothing is downloaded.
    const downloads = w.telegram.downloads.length;
    const told = w.telegram.addFile(jpeg(6, MAX_BYTES + 1_000));
    const untold = { file_id: told.file_id, file_unique_id: told.file_unique_id };
    const [said] = await send(chat, { document: { ...untold, file_name: "told.pdf" } });
    expect(said).toMatch(/^Your document “told\.pdf” \(65 KB\) is larger than the 64 KB/);
    expect(w.telegram.downloads.length).toBe(downloads);
    expect(w.h.fake.requests.length).toBe(calls);
    expect(await w.h.app.store.lastTurns(String(chat), 5)).toEqual([]);
  });

  it("leaves a transient download failure to the inbox, then stores the message once", async () => {
    const chat = USER + 5;
    const photo = w.telegram.addFile(jpeg(9));
    w.telegram.failNextDownload(502);
    await expect(send(chat, { photo: photoSizes(photo) })).rejects.toThrow();
    expect(await w.h.app.store.lastTurns(String(chat), 5)).toEqual([]);
    const again = updateId;
    updateId = again - 1;
    w.h.fake.script(text("got it"));
    expect(await send(chat, { photo: photoSizes(photo) })).toEqual(["got it"]);
    const events = (await w.h.app.store.loadContext(String(chat))).events;
    expect(events.map((e) => e.event.role)).toEqual(["user", "model"]);
  });

  it("after a turn, transcribes when the message held a voice note or a transcription failed before", async () => {
    const chat = USER + 10;
    const conversation = String(chat);
    const voice = w.telegram.addFile(ogg());
    w.h.fake.script(text("noted"));
    await send(chat, { voice: { ...voice, duration: 3, mime_type: "audio/ogg" } });
    const summaryCalls = () => w.h.fake.requests.filter((r) => r.model === SUMMARY_MODEL).length;
    const before = summaryCalls();
    // A turn of words only reads nothing.
    expect(await w.h.app.transcriber.afterTurn(conversation, false)).toBe(0);
    expect(summaryCalls()).toBe(before);
    w.h.fake.scriptFor(SUMMARY_MODEL, status(400, "cannot decode"));
    expect(await w.h.app.transcriber.afterTurn(conversation, true)).toBe(0);
    expect(summaryCalls()).toBeGreaterThan(before);
    // The failure is tried again after the next turn, words only as it may be.
    w.h.fake.scriptFor(SUMMARY_MODEL, text("Three seconds of words."));
    expect(await w.h.app.transcriber.afterTurn(conversation, false)).toBe(1);
    const asked = summaryCalls();
    expect(await w.h.app.transcriber.afterTurn(conversation, false)).toBe(0);
    expect(summaryCalls()).toBe(asked);
  });

  it("transcribes a voice note once, for /history and search_history, retrying a failure later", async () => {
    const chat = USER + 8;
    const voice = w.telegram.addFile(ogg());
    w.h.fake.script(text("noted"));
    await send(chat, { voice: { ...voice, duration: 12, mime_type: "audio/ogg" } });
    w.h.fake.scriptFor(SUMMARY_MODEL, status(400, "cannot decode"));
    expect(await w.h.app.transcriber.transcribePending(String(chat))).toBe(0);
    const [line] = historyLines(await w.h.app.store.lastTurns(String(chat), 1));
    expect(line).toEqual({ kind: "user", text: "🎤 0:12" });
    w.h.fake.scriptFor(SUMMARY_MODEL, text("Buy oat milk and call Mira."));
    expect(await w.h.app.transcriber.transcribePending(String(chat))).toBe(1);
    const asked = w.h.fake.requests.filter((r) => r.model === SUMMARY_MODEL).at(-1);
    expect(asked?.body.contents[0]?.parts?.[0]?.inlineData?.mimeType).toBe("audio/ogg");
    // /usage counts the transcript's call with the conversation's others.
    await w.h.app.usageRecorder.flush();
    const usage = await w.h.app.usage.since(String(chat), new Date(0));
    expect(usage.map((u) => u.model)).toContain(SUMMARY_MODEL);
    // Once written, it is not asked for again.
    const summaryCalls = w.h.fake.requests.filter((r) => r.model === SUMMARY_MODEL).length;
    expect(await w.h.app.transcriber.transcribePending(String(chat))).toBe(0);
    expect(w.h.fake.requests.filter((r) => r.model === SUMMARY_MODEL)).toHaveLength(summaryCalls);
    const lines = historyLines(await w.h.app.store.lastTurns(String(chat), 1));
    expect(lines[0]).toEqual({ kind: "user", text: "🎤 0:12 «Buy oat milk and call Mira.»" });
    // Asked from another topic of the chat: the note's own context holds it, so it is left out there.
    const found = await w.h.app.tools.execute(
      "search_history",
      { query: "oat milk" },
      toolContext(`${chat}:77`),
    );
    expect(JSON.stringify(found)).toContain("Buy oat milk and call Mira.");
  });

  it("takes an hour-long voice note within a raised limit, answers before its transcript, and caps that", async () => {
    const chat = USER + 9;
    const hour = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(5 * 1024 * 1024 - 4, 7)]);
    const voice = { ...w.telegram.addFile(hour), duration: 3_600, mime_type: "audio/ogg" };
    // Over the limit (64 KB here): told so, never fetched, nothing stored.
    const [refused] = await send(chat, { voice });
    expect(refused).toMatch(/^Your voice note \(5\.0 MB\) is larger than the 64 KB I can take/);
    expect(w.telegram.calls.filter((c) => c.body.file_id === voice.file_id)).toEqual([]);
    expect(await w.h.app.store.lastTurns(String(chat), 1)).toEqual([]);
    // Within a raised MEDIA_MAX_BYTES it is read, and answered while its transcript is written.
    let transcribed: Promise<unknown> = Promise.resolve();
    const raised = w.botWith({
      media: {
        save: w.h.app.attachments.save,
        read: w.h.app.attachments.read,
        maxBytes: 8 * 1024 * 1024,
        workspaces: w.h.app.workspaces,
        transcribe: (conversation) => {
          transcribed = w.h.app.transcriber.transcribePending(conversation);
          return transcribed;
        },
      },
    });
    let finishTranscript = () => {};
    const transcriptAsked = new Promise<void>((resolve) => {
      w.h.fake.scriptFor(SUMMARY_MODEL, async () => {
        resolve();
        await new Promise<void>((release) => {
          finishTranscript = release;
        });
        return text("and then we talked on. ".repeat(6_000));
      });
    });
    w.h.fake.script(text("an hour of it, heard"));
    expect(await send(chat, { voice }, raised)).toEqual(["an hour of it, heard"]);
    const asked = w.h.fake.requests.filter((r) => r.model === CHAT_MODEL).at(-1);
    // Past the inline rule: uploaded to Gemini's Files API and named by uri.
    const file = w.h.fake.files.files.get(w.h.fake.files.uploaded.at(-1)?.name ?? "");
    expect(file?.bytes.equals(hour)).toBe(true);
    const named = asked?.body.contents
      .at(-1)
      ?.parts?.flatMap((p) => (p.fileData ? [p.fileData] : []));
    expect(named).toEqual([{ fileUri: file?.uri, mimeType: "audio/ogg" }]);
    await transcriptAsked;
    const [pending] = historyLines(await w.h.app.store.lastTurns(String(chat), 1));
    expect(pending).toEqual({ kind: "user", text: "🎤 1:00:00" });
    // The transcript is asked of the same uploaded file: no second, inline copy of an hour.
    const transcribing = w.h.fake.requests.filter((r) => r.model === SUMMARY_MODEL).at(-1);
    expect(transcribing?.body.contents[0]?.parts?.[0]).toEqual({
      fileData: { fileUri: file?.uri, mimeType: "audio/ogg" },
    });
    expect(w.h.fake.files.uploaded.filter((u) => u.name === file?.name)).toHaveLength(1);
    finishTranscript();
    expect(await transcribed).toBe(1);
    const [event] = (await w.h.app.store.loadContext(String(chat))).events;
    const part = event?.event.parts.find((p) => p.kind === "media");
    const transcript = part?.kind === "media" ? (part.transcript ?? "") : "";
    expect(transcript).toHaveLength(MAX_TRANSCRIPT_CHARS + 1);
    expect(transcript.endsWith("…")).toBe(true);
  });

  it("reads a file a local Bot API server gives by absolute path", async () => {
    const chat = USER + 6;
    const photo = w.telegram.addFile(jpeg(4), { localDir: local });
    w.h.fake.script(text("local"));
    expect(await send(chat, { photo: photoSizes(photo) })).toEqual(["local"]);
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.data).toBe(jpeg(4).toString("base64"));
  });

  it("gives stickers, locations, venues, contacts, polls and dice to the model as words", async () => {
    const chat = USER + 7;
    w.h.fake.setDefault((r) => text(`echo ${lastWords(r)}`));
    const sticker = (extra: object) => ({
      file_id: "gone",
      file_unique_id: "g",
      width: 512,
      height: 512,
      type: "regular" as const,
      is_animated: false,
      is_video: false,
      emoji: "😺",
      set_name: "deleted_set",
      ...extra,
    });
    expect(await send(chat, { sticker: sticker({ is_animated: true }) })).toEqual([
      "echo [Sticker 😺]",
    ]);
    // A static sticker whose set is gone cannot be fetched: its emoji still reaches the model.
    expect(await send(chat, { sticker: sticker({}) })).toEqual(["echo [Sticker 😺]"]);
    const webp = Buffer.concat([
      Buffer.from("RIFF"),
      Buffer.from([8, 0, 0, 0]),
      Buffer.from("WEBPVP8 "),
    ]);
    const stored = w.telegram.addFile(webp);
    await send(chat, { sticker: sticker({ ...stored }) });
    expect(inlineOf(w.h.fake.requests.at(-1))[0]?.mimeType).toBe("image/webp");
    const said = async (content: Partial<Message>) => (await send(chat, content))[0];
    expect(await said({ location: { latitude: 52.52, longitude: 13.405 } })).toBe(
      "echo [Location: 52.520000, 13.405000]",
    );
    expect(
      await said({
        venue: {
          location: { latitude: 1, longitude: 2 },
          title: "Café",
          address: "Main St 1",
        },
        location: { latitude: 1, longitude: 2 },
      }),
    ).toBe("echo [Venue: Café, Main St 1 (1.000000, 2.000000)]");
    expect(
      await said({ contact: { phone_number: "+49 30 1234", first_name: "Mira", last_name: "K" } }),
    ).toBe("echo [Contact: Mira K, +49 30 1234]");
    expect(
      await said({
        poll: {
          id: "p",
          question: "Lunch?",
          options: [
            { text: "Pizza", voter_count: 0 },
            { text: "Soup", voter_count: 0 },
          ],
          total_voter_count: 0,
          is_closed: false,
          is_anonymous: true,
          type: "regular",
          allows_multiple_answers: false,
        } as never,
      }),
    ).toBe("echo [Poll: Lunch? — options: Pizza / Soup]");
    expect(await said({ dice: { emoji: "🎲", value: 4 } })).toBe("echo [Dice 🎲 rolled: 4]");
    w.h.fake.setDefault(text("ok"));
  });
});
