import { afterAll, describe, expect, it } from "vitest";
import { type FakeGemini, type RecordedRequest, startFakeGemini, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";

const CHATS = 8;
const MESSAGES_PER_CHAT = 6;
// One more chat per replica to warm it up.
const users = Array.from({ length: CHATS + 2 }, (_, i) => ALLOWED_USER + i);

function tagOf(request: RecordedRequest): string {
  return wordsOf(request.body.contents.at(-1)?.parts);
}

describe("two replicas on one PostgreSQL database", () => {
  let w: ServiceWorld;
  let geminiB: FakeGemini;
  afterAll(async () => {
    await w?.close();
    await geminiB?.close();
  });

  // Slow hosts take seconds to start a service and its first turn (module loading blocks Node's
  // event loop): the timeouts leave room for that; they do not pace the test.
  it("run every update exactly once, each chat strictly in order, and take over a dead replica's turn", {
    timeout: 480_000,
  }, async () => {
    // Each replica talks to its own fake Gemini so the test knows which replica is mid-turn;
    // both answer through one step function that watches every chat's requests.
    const inFlight = new Map<number, string>();
    const overlaps: string[] = [];
    const blockedOn = { A: 0, B: 0 };
    let gate: Promise<void> = Promise.resolve();
    let openGate = () => {};
    const answer = (replica: "A" | "B") => async (request: RecordedRequest) => {
      const tag = tagOf(request);
      const chat = Number(/^c(\d+)#/.exec(tag)?.[1]);
      if (inFlight.has(chat)) overlaps.push(`${tag} while ${inFlight.get(chat)}`);
      inFlight.set(chat, tag);
      blockedOn[replica]++;
      await gate;
      blockedOn[replica]--;
      inFlight.delete(chat);
      return text(`echo ${tag}`);
    };

    geminiB = await startFakeGemini();
    w = await startWorld({
      kind: "postgres",
      // Short, so the test need not wait long for the dead replica's turns; long enough that a
      // live replica stalled by a slow host does not lose its turns too often (if it does, it
      // stops and the other replica answers: still exactly once).
      env: { ALLOWED_USER_IDS: users.join(","), INBOX_LEASE_SECONDS: "5" },
    });
    w.gemini.setDefault(answer("A"));
    geminiB.setDefault(answer("B"));
    const a = w.service;
    const b = await w.start({ GEMINI_BASE_URL: geminiB.baseUrl });

    const expected: string[] = [];
    const delivered = () => w.telegram.sent.map((m) => m.plain_text);
    const post = async (chat: number, k: number, target: typeof a) => {
      const id = w.nextUpdateId();
      const tag = `c${chat}#${k}`;
      expected.push(tag);
      const update = buildTextUpdate({
        updateId: id,
        messageId: id,
        text: tag,
        userId: users[chat] as number,
      });
      expect((await w.post(update, { service: target })).status).toBe(200);
    };
    const allDelivered = () => expected.every((t) => delivered().includes(`echo ${t}`));

    // A first turn loads the Gemini SDK, which blocks a service's event loop for seconds on a
    // slow host, long enough to lose a lease: then the other replica takes the turn over and calls
    // the model for it too. A first turn in a chat of its own keeps that out of what is checked.
    await post(CHATS, 0, a);
    await post(CHATS + 1, 0, b);
    await eventually(allDelivered, 90_000);

    // A burst spread over both replicas.
    for (let k = 0; k < 2; k++)
      for (let c = 0; c < CHATS; c++) await post(c, k, (c + k) % 2 ? b : a);
    await eventually(allDelivered, 90_000);
    expect(geminiB.requests.length).toBeGreaterThan(0);

    // Hold every model answer, then give each chat one more message through B: once every chat is
    // waiting on Gemini, no turn sits between its answer and its delivery, and killing B loses
    // only turns in the middle of a model call.
    gate = new Promise((resolve) => {
      openGate = resolve;
    });
    for (let c = 0; c < CHATS; c++) await post(c, 2, b);
    await eventually(() => inFlight.size === CHATS && blockedOn.B > 0, 90_000);
    b.proc.kill("SIGKILL");
    await b.exited;
    openGate();

    for (let k = 3; k < MESSAGES_PER_CHAT; k++) for (let c = 0; c < CHATS; c++) await post(c, k, a);
    await eventually(allDelivered, 120_000);

    expect(overlaps).toEqual([]);
    for (const t of expected) expect(delivered().filter((d) => d === `echo ${t}`)).toHaveLength(1);
    for (let c = 0; c < CHATS; c++) {
      const order = delivered().filter((d) => d.startsWith(`echo c${c}#`));
      expect(order).toEqual(Array.from({ length: MESSAGES_PER_CHAT }, (_, k) => `echo c${c}#${k}`));
    }
    expect(w.gemini.rejections).toEqual([]);
    expect(geminiB.rejections).toEqual([]);
  });
});
