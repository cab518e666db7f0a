import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RecordedRequest, text, unprocessableMessage, withBytes } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import {
  ALLOWED_USER,
  eventually,
  photoUpdate,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

/**
 * A photo Gemini cannot read, sent through Telegram to the running service (issue 36.1): the user
 * is told, /history shows it unanswered, and it does not poison the conversation's next message.
 */

/** A whole JPEG (the service sniffs photos) that the fake Gemini cannot process. */
const unreadable = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  Buffer.alloc(2_000, 7),
  Buffer.from([0xff, 0xd9]),
]);

const inlineOf = (r: RecordedRequest | undefined) =>
  (r?.body.contents ?? []).flatMap((c) => (c.parts ?? []).flatMap((p) => p.inlineData ?? []));
const textsOf = (r: RecordedRequest | undefined) =>
  (r?.body.contents ?? []).flatMap((c) => (c.parts ?? []).flatMap((p) => p.text ?? []));

describe.each(DATABASE_KINDS)("a photo Gemini refuses, through the service on %s", (kind) => {
  let w: ServiceWorld;
  const chat = ALLOWED_USER;
  const sent = () => w.telegram.sent.filter((m) => m.chat_id === chat).map((m) => m.plain_text);

  beforeAll(async () => {
    w = await startWorld({ kind });
  });
  afterEach(() => {
    expect(w.service.proc.exitCode).toBeNull();
    expect(w.gemini.rejections).toEqual([]);
  });
  afterAll(async () => {
    await w?.close();
  });

  it("tells the user, shows it unanswered in /history, and answers the next message without it", async () => {
    w.gemini.cannotProcess(withBytes(unreadable));
    const photo = photoUpdate(w, chat, w.telegram.addFile(unreadable), "what is this?");
    expect((await w.post(photo)).status).toBe(200);
    const reason = unprocessableMessage("image/jpeg");
    const [told] = await eventually(() => sent().length > 0 && sent());
    expect(told).toContain(reason);
    expect(w.gemini.unprocessed).toHaveLength(1);
    expect(w.gemini.requests).toHaveLength(1);

    await w.say("/history");
    const history = await eventually(() => sent().find((t) => t.startsWith("You:")));
    expect(history).toBe(
      `You: 📷 photo «what is this?»\nKoroku: ⚠ Not answered: Gemini refused the request (${reason})`,
    );

    w.gemini.script(text("Hello again."));
    await w.say("hello?");
    await eventually(() => sent().includes("Hello again."));
    const [, request, ...more] = w.gemini.requests;
    expect(more).toEqual([]);
    expect(inlineOf(request)).toEqual([]);
    expect(textsOf(request)).toEqual(
      expect.arrayContaining([
        "[a photo Gemini could not read]",
        "what is this?",
        expect.stringContaining("hello?"),
      ]),
    );
    expect(w.gemini.unprocessed).toHaveLength(1);
  });
});
