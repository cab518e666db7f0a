import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGemini, startFakeGemini, streamed, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type RunningService,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

/**
 * Two replicas on one PostgreSQL schema: a stop (the button, /stop) that reaches the replica not
 * writing the answer still ends it, through the database (src/queue/replica-stops.ts).
 */

const ANSWER = Array.from({ length: 60 }, (_, i) => `Sentence number ${i + 1} of the answer.`).join(
  " ",
);
// About 8 s: a stop that came only with the next lease renewal (every 10 s here) would be late.
const slowly = () => streamed(text(ANSWER), { chunkChars: 30, chunkDelayMs: 100 });
const NOTHING = "There is no answer being written to stop.";
const users = [ALLOWED_USER, ALLOWED_USER + 1, ALLOWED_USER + 2];

let w: ServiceWorld;
let geminiB: FakeGemini;
let a: RunningService;
let b: RunningService;

beforeAll(async () => {
  geminiB = await startFakeGemini();
  w = await startWorld({
    kind: "postgres",
    env: { ALLOWED_USER_IDS: users.join(","), INBOX_LEASE_SECONDS: "30" },
  });
  a = w.service;
  b = await w.start({ GEMINI_BASE_URL: geminiB.baseUrl });
  w.gemini.setDefault(slowly());
  geminiB.setDefault(slowly());
}, 120_000);

afterAll(async () => {
  await w?.close();
  await geminiB?.close();
});

const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
const draftsTo = (chatId: number) => w.telegram.drafts.filter((d) => d.chat_id === chatId);
const asked = (gemini: FakeGemini, user: number) =>
  gemini.requests.some((r) => JSON.stringify(r.body.contents).includes(`from ${user}`));

function stopFrom(user: number) {
  const id = w.nextUpdateId();
  return buildTextUpdate({ updateId: id, messageId: id, text: "/stop", userId: user });
}

/** Starts a long answer for `user` and returns the replica not writing it. */
async function answerElsewhere(user: number): Promise<{ updateId: number; other: RunningService }> {
  const updateId = await w.say(`write a lot, from ${user}`, { userId: user });
  const runner = await eventually(
    () => (asked(w.gemini, user) ? a : asked(geminiB, user) ? b : undefined),
    60_000,
  );
  await eventually(() => draftsTo(user).some((d) => d.plain_text.length > 60), 60_000);
  return { updateId, other: runner === a ? b : a };
}

describe("a stop that reaches the other replica", () => {
  it("the stop button ends the answer where it is written", async () => {
    const user = users[0] as number;
    const { updateId, other } = await answerElsewhere(user);
    const res = await w.post(w.telegram.pressStop(user, updateId), { service: other });
    expect(res.status).toBe(200);
    const [kept] = await eventually(() => sentTo(user).length > 0 && sentTo(user));
    expect(kept?.plain_text.length).toBeLessThan(ANSWER.length);
    expect(ANSWER.startsWith(kept?.plain_text ?? "")).toBe(true);
  });

  it("/stop ends it too, and says nothing about there being nothing to stop", async () => {
    const user = users[1] as number;
    const { other } = await answerElsewhere(user);
    expect((await w.post(stopFrom(user), { service: other })).status).toBe(200);
    const [kept] = await eventually(() => sentTo(user).length > 0 && sentTo(user));
    expect(kept?.plain_text.length).toBeLessThan(ANSWER.length);
    expect(sentTo(user).map((m) => m.plain_text)).not.toContain(NOTHING);
  });

  it("/stop with nothing written anywhere says so", async () => {
    const user = users[2] as number;
    expect((await w.post(stopFrom(user), { service: b })).status).toBe(200);
    const [said] = await eventually(() => sentTo(user).length > 0 && sentTo(user));
    expect(said?.plain_text).toBe(NOTHING);
  });
});
