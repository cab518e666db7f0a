import type { Message, Update } from "grammy/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import type { FileRef } from "../fakes/telegram.js";
import { chatFor } from "../fakes/telegram-objects.js";
import {
  ALLOWED_USER,
  eventually,
  photoUpdate,
  type RunningService,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";

/**
 * Photos through the real service. Albums: Telegram sends each item as an update of its own, and
 * the album becomes one turn — one stored user event, one model call, one answer — across a crash
 * and across replicas. Floods: fifty photos at once in one chat are all stored and answered in
 * order, while other chats go on.
 */

const BOT = "koroku_test_bot";
const USERS = Array.from({ length: 8 }, (_, i) => ALLOWED_USER + 1 + i);
const GROUP = -100_777_000;

/** A small whole JPEG, different for every seed. */
const jpeg = (seed: number) =>
  Buffer.concat([
    Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
    Buffer.alloc(1_500, seed),
    Buffer.from([0xff, 0xd9]),
  ]);

/** How many files the user's newest message holds, and its words. */
const answerSeen = (r: RecordedRequest) => {
  const answer = text(`seen ${inlineOf(r).length}: ${lastWords(r)}`);
  return lastWords(r).startsWith("flood") ? { ...answer, delayMs: FLOOD_TURN_MS } : answer;
};

const inlineOf = (r: RecordedRequest | undefined) =>
  (r?.body.contents.at(-1)?.parts ?? []).flatMap((p) => (p.inlineData ? [p.inlineData] : []));
const lastWords = (r: RecordedRequest | undefined) => wordsOf(r?.body.contents.at(-1)?.parts);

type Item = { file: FileRef; caption?: string };

/** The updates Telegram sends for an album: one per item, consecutive ids, one media_group_id. */
function albumUpdates(
  w: ServiceWorld,
  chatId: number,
  group: string,
  items: readonly Item[],
): Update[] {
  return items.map((item) => {
    const id = w.nextUpdateId();
    const mention = item.caption?.indexOf(`@${BOT}`) ?? -1;
    const message = {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: chatFor(chatId),
      from: { id: chatId > 0 ? chatId : ALLOWED_USER, is_bot: false, first_name: "T" },
      media_group_id: group,
      photo: [{ ...item.file, width: 800, height: 600 }],
      ...(item.caption === undefined ? {} : { caption: item.caption }),
      ...(mention < 0
        ? {}
        : { caption_entities: [{ type: "mention", offset: mention, length: BOT.length + 1 }] }),
    } as Message;
    return { update_id: id, message } as Update;
  });
}

const FLOOD = 50;
/** The fake model's time for each turn of a flooded chat: the flood takes a while to answer. */
const FLOOD_TURN_MS = 20;

/**
 * Fifty photos in one chat, posted one after another as fast as the webhook takes them (through
 * `services` in turn), and a text in another chat among them. Every photo is stored and answered,
 * in order; the other chat is answered before the flood is through; the stored events hold
 * references, not bytes, so contexts in memory stay small however many photos come.
 */
async function floodOfPhotos(
  w: ServiceWorld,
  chat: number,
  other: number,
  services: RunningService[],
): Promise<void> {
  const photos = Array.from({ length: FLOOD }, (_, i) => jpeg(100 + i));
  for (const [i, photo] of photos.entries()) {
    const update = photoUpdate(w, chat, w.telegram.addFile(photo), `flood ${chat} #${i + 1}`);
    const service = services[i % services.length] as RunningService;
    expect((await w.post(update, { service })).status).toBe(200);
    if (i === 9) await w.say(`quick one ${other}`, { chatId: other, userId: other });
  }
  // Compaction notices come in between (the default budget is 30 events): answers only.
  const answers = () =>
    w.telegram.sent
      .filter((m) => m.chat_id === chat && m.plain_text.startsWith("seen"))
      .map((m) => m.plain_text);
  await eventually(() => answers().length >= FLOOD);
  expect(answers()).toEqual(photos.map((_, i) => `seen 1: flood ${chat} #${i + 1}`));
  const order = w.telegram.sent.map((m) => m.chat_id);
  expect(order.indexOf(other)).toBeLessThan(order.lastIndexOf(chat));
  const db = openDatabase(w.db.target);
  try {
    const files = await db.db
      .selectFrom("attachment_uses")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("chat_id", "=", String(chat))
      .executeTakeFirstOrThrow();
    expect(Number(files.n)).toBe(FLOOD);
    const events = await db.db
      .selectFrom("messages")
      .select("event_json")
      .where("chat_id", "=", String(chat))
      .where("kind", "=", "session")
      .execute();
    expect(events).toHaveLength(2 * FLOOD);
    expect(Math.max(...events.map((e) => e.event_json.length))).toBeLessThan(1_000);
  } finally {
    await db.close();
  }
}

/** Posts updates at once, as Telegram's parallel webhook connections do (`services` in turn). */
async function postAll(w: ServiceWorld, updates: readonly Update[], services?: RunningService[]) {
  const responses = await Promise.all(
    updates.map((update, i) => {
      const service = services?.[i % services.length];
      return w.post(update, service ? { service } : {});
    }),
  );
  expect(responses.map((r) => r.status)).toEqual(updates.map(() => 200));
}

describe("albums and floods of photos on SQLite", () => {
  let w: ServiceWorld;
  let nextUser = 0;
  const user = () => USERS[nextUser++] as number;
  const sentTo = (chatId: number) =>
    w.telegram.sent.filter((m) => m.chat_id === chatId).map((m) => m.plain_text);
  const requestsOf = (chatId: number) =>
    w.gemini.requests.filter((r) => lastWords(r).includes(`chat ${chatId}`));

  beforeAll(async () => {
    w = await startWorld({ env: { ALLOWED_USER_IDS: [ALLOWED_USER, ...USERS].join(",") } });
    w.gemini.setDefault(answerSeen);
  });
  afterEach(() => {
    expect(w.service.proc.exitCode).toBeNull();
    expect(w.gemini.rejections).toEqual([]);
  });
  afterAll(async () => {
    await w?.close();
  });

  it("answers an album once, as one turn holding every item in order and the caption", async () => {
    const chat = user();
    const photos = [1, 2, 3].map((seed) => jpeg(seed));
    const updates = albumUpdates(w, chat, "album-1", [
      { file: w.telegram.addFile(photos[0] as Buffer) },
      { file: w.telegram.addFile(photos[1] as Buffer), caption: `chat ${chat}: which is best?` },
      { file: w.telegram.addFile(photos[2] as Buffer) },
    ]);
    // Webhook requests may come in any order.
    await postAll(w, [updates[2], updates[0], updates[1]] as Update[]);
    const [answer] = await eventually(() => sentTo(chat).length > 0 && sentTo(chat));
    expect(answer).toBe(`seen 3: chat ${chat}: which is best?`);
    const [request, ...more] = requestsOf(chat);
    expect(more).toEqual([]);
    expect(inlineOf(request)).toEqual(
      photos.map((p) => ({ mimeType: "image/jpeg", data: p.toString("base64") })),
    );
    // Nothing else of the album runs later.
    await w.say("/history", { chatId: chat, userId: chat });
    const history = await eventually(() => sentTo(chat).find((t) => t.startsWith("You:")));
    expect(history.match(/📷/g)).toHaveLength(3);
    expect(sentTo(chat).filter((t) => t.startsWith("seen"))).toHaveLength(1);
  });

  it("answers the other nine of a ten-photo album and names the one it could not read", async () => {
    for (const broken of ["gone", "damaged"] as const) {
      const chat = user();
      const photos = Array.from({ length: 10 }, (_, i) => jpeg(20 + i));
      const files = photos.map((p) => w.telegram.addFile(p));
      // Item 4 cannot be had from Telegram any more (getFile refuses its id), or is cut off.
      files[3] =
        broken === "gone"
          ? { file_id: "deleted-file", file_unique_id: "deleted", file_size: 1_502 }
          : w.telegram.addFile(jpeg(99).subarray(0, 900));
      const items = files.map((file, i) =>
        i === 0 ? { file, caption: `chat ${chat}` } : { file },
      );
      await postAll(w, albumUpdates(w, chat, `album-${broken}`, items));
      const answer = await eventually(() => sentTo(chat).find((t) => t.startsWith("seen")));
      expect(answer).toContain("seen 9:");
      expect(answer).toContain("[Item 4 of 10 of the album could not be read]");
      const [told] = sentTo(chat);
      expect(told).toMatch(
        broken === "gone"
          ? /^Album item 4 of 10: I could not fetch your photo from Telegram/
          : /^Album item 4 of 10: Your photo looks damaged/,
      );
      const [request] = requestsOf(chat);
      const kept = photos.filter((_, i) => i !== 3).map((p) => p.toString("base64"));
      expect(inlineOf(request).map((d) => d.data)).toEqual(kept);
      expect(requestsOf(chat)).toHaveLength(1);
    }
  });

  it("runs an item that comes after its album was answered as a turn of its own", async () => {
    const chat = user();
    const [first, second, late] = albumUpdates(w, chat, "album-late", [
      { file: w.telegram.addFile(jpeg(40)), caption: `chat ${chat}` },
      { file: w.telegram.addFile(jpeg(41)) },
      { file: w.telegram.addFile(jpeg(42)), caption: `chat ${chat}, late` },
    ]);
    await postAll(w, [first, second] as Update[]);
    await eventually(() => sentTo(chat).length === 1);
    await postAll(w, [late] as Update[]);
    await eventually(() => sentTo(chat).length === 2);
    // The late turn's own message holds its one photo (the album's two are in the history).
    expect(sentTo(chat)).toEqual([`seen 2: chat ${chat}`, `seen 1: chat ${chat}, late`]);
  });

  it("in a group, runs an album whose caption mentions the bot and ignores one that does not", async () => {
    const before = w.gemini.requests.length;
    const ignored = albumUpdates(w, GROUP, "group-chatter", [
      { file: w.telegram.addFile(jpeg(50)), caption: "holiday pictures" },
      { file: w.telegram.addFile(jpeg(51)) },
    ]);
    const addressed = albumUpdates(w, GROUP, "group-question", [
      { file: w.telegram.addFile(jpeg(52)) },
      { file: w.telegram.addFile(jpeg(53)), caption: `@${BOT} chat ${GROUP}: where is this?` },
    ]);
    await postAll(w, [...ignored, ...addressed]);
    // In a group the answer is one message edited as it is written: wait for its last words.
    const answer = await eventually(() => sentTo(GROUP).find((t) => t.endsWith("?")));
    expect(answer).toBe("seen 2: [T] chat -100777000: where is this?");
    expect(w.gemini.requests.length - before).toBe(1);
    expect(sentTo(GROUP)).toHaveLength(1);
  });

  it("stores and answers fifty photos sent at once in one chat, in order, other chats unaffected", async () => {
    await floodOfPhotos(w, user(), user(), [w.service]);
  });

  it("answers an album whose turn a kill -9 interrupted once, with every item, after the restart", async () => {
    const chat = user();
    w.gemini.script({ ...text("never delivered"), delayMs: 30_000 });
    const updates = albumUpdates(w, chat, "album-crash", [
      { file: w.telegram.addFile(jpeg(60)), caption: `chat ${chat}` },
      { file: w.telegram.addFile(jpeg(61)) },
      { file: w.telegram.addFile(jpeg(62)) },
    ]);
    await postAll(w, updates);
    await eventually(() => requestsOf(chat).length === 1);
    w.service.proc.kill("SIGKILL");
    await w.service.exited;
    w.service = await w.start();
    const answer = await eventually(() => sentTo(chat).find((t) => t.startsWith("seen")));
    expect(answer).toBe(`seen 3: chat ${chat}`);
    const after = requestsOf(chat).at(-1);
    // The album was stored once: its three photos appear once in what Gemini sees.
    expect(after?.body.contents.filter((c) => c.role === "user")).toHaveLength(1);
    expect(sentTo(chat)).toEqual([`seen 3: chat ${chat}`]);
  });
});

describe("albums and floods of photos on two PostgreSQL replicas", () => {
  let w: ServiceWorld;
  let b: RunningService;
  beforeAll(async () => {
    w = await startWorld({
      kind: "postgres",
      env: { ALLOWED_USER_IDS: [ALLOWED_USER, ...USERS].join(",") },
    });
    w.gemini.setDefault(answerSeen);
    b = await w.start();
  });
  afterEach(() => {
    expect(w.gemini.rejections).toEqual([]);
  });
  afterAll(async () => {
    await w?.close();
  });

  it("answer an album whose items reached both replicas, in any order, once", async () => {
    const chat = USERS[0] as number;
    const updates = albumUpdates(
      w,
      chat,
      "album-replicas",
      [70, 71, 72, 73, 74].map((seed, i) => ({
        file: w.telegram.addFile(jpeg(seed)),
        ...(i === 2 ? { caption: "five" } : {}),
      })),
    );
    await postAll(w, [...updates].reverse(), [w.service, b]);
    const answer = await eventually(() => w.telegram.sent.find((m) => m.chat_id === chat));
    expect(answer.plain_text).toBe("seen 5: five");
    // A later message of the chat runs after everything of the album: still one call, one answer.
    await w.say("/history", { chatId: chat, userId: chat });
    await eventually(() => w.telegram.sent.some((m) => m.plain_text.startsWith("You:")));
    expect(w.gemini.requests).toHaveLength(1);
    expect(w.telegram.sent.filter((m) => m.plain_text.startsWith("seen"))).toHaveLength(1);
  });

  it("store and answer fifty photos sent to either replica, in order, other chats unaffected", async () => {
    await floodOfPhotos(w, USERS[1] as number, USERS[2] as number, [w.service, b]);
  });
});
