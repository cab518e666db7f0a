import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";

const CHATS = 60;
const MESSAGES = 5;
const users = Array.from({ length: CHATS }, (_, i) => ALLOWED_USER + i);

describe("load: many chats at once through the webhook", () => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startWorld({ env: { ALLOWED_USER_IDS: users.join(",") } });
    w.gemini.setDefault((r: RecordedRequest) =>
      text(`echo ${wordsOf(r.body.contents.at(-1)?.parts)}`),
    );
  });
  afterAll(async () => {
    await w.close();
  });

  it(`answers ${CHATS * MESSAGES} messages from ${CHATS} chats exactly once, each chat in order`, async () => {
    // Every chat's messages go out at once (bounded: one request per message, all on loopback).
    const posts: Promise<Response>[] = [];
    for (let k = 0; k < MESSAGES; k++) {
      for (let c = 0; c < CHATS; c++) {
        const id = w.nextUpdateId();
        posts.push(
          w.post(
            buildTextUpdate({
              updateId: id,
              messageId: id,
              text: `c${c}#${k}`,
              userId: users[c] as number,
            }),
          ),
        );
      }
    }
    const statuses = await Promise.all(posts.map(async (p) => (await p).status));
    expect(statuses.every((s) => s === 200)).toBe(true);
    await eventually(() => w.telegram.sent.length >= CHATS * MESSAGES, 120_000);
    const sent = w.telegram.sent.map((m) => m.plain_text);
    expect(new Set(sent).size).toBe(CHATS * MESSAGES);
    for (let c = 0; c < CHATS; c++) {
      const order = w.telegram.sent.filter((m) => m.chat_id === users[c]).map((m) => m.plain_text);
      expect(order).toEqual(Array.from({ length: MESSAGES }, (_, k) => `echo c${c}#${k}`));
    }
    expect(w.gemini.rejections).toEqual([]);
    expect(w.service.proc.exitCode).toBeNull();
  });
});
