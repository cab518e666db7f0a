import { BotError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type Lease, LeaseLostError } from "../../src/queue/inbox.js";
import { text } from "../fakes/gemini.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { botOnHarness } from "../helpers/bot.js";
import { CHAT_MODEL, type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";
import { refusingPort } from "../helpers/refusing-port.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

const USER = 5150;
const CHAT = String(USER);
const LEASE_MS = 30_000;

/** Runs one text update through the real bot, on the harness's app and the fake Telegram. */
async function handle(
  h: Harness,
  telegram: FakeTelegram,
  updateId: number,
  text: string,
  lease?: Lease,
): Promise<unknown> {
  const { bot } = botOnHarness(h, telegram, {
    allowedUserIds: [USER],
    settings: { model: CHAT_MODEL, maxEvents: 30, maxTokens: 0, timeZone: "UTC" },
  });
  const update = buildTextUpdate({ updateId, messageId: updateId, text, userId: USER });
  const error = await bot.run(update, lease).then(
    () => undefined,
    (e: unknown) => e,
  );
  return error instanceof BotError ? error.error : error;
}

describe("commands that write, run by a process that lost its update", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  let clock = 1_000_000;
  let updateId = 0;

  beforeAll(async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  /** A lease on the update that another worker has since taken over and finished. */
  async function lostLease(id: number): Promise<Lease> {
    const inboxOf = (workerId: string) =>
      createInbox({
        db: h.app.database.db,
        kind: h.app.database.kind,
        workerId,
        leaseMs: LEASE_MS,
        now: () => clock,
        scrub: createScrubber([]),
      });
    const stalled = inboxOf("stalled");
    await stalled.add(id, CHAT, {});
    const mine = await stalled.claim();
    if (!mine) throw new Error("expected to claim the update");
    clock += LEASE_MS + 1;
    const taker = inboxOf("taker");
    const taken = await taker.claim();
    expect(taken).toMatchObject({ updateId: id });
    // Done by the taker, so that the chat's next update can be claimed.
    expect(taken && (await taker.finish(taken))).toBe(true);
    return stalled.leaseOf(mine);
  }

  async function runCommand(command: string): Promise<unknown> {
    const id = ++updateId;
    const lease = await lostLease(id);
    return handle(h, telegram, id, command, lease);
  }

  async function storeTurns(count: number) {
    for (let i = 0; i < count; i++) {
      await h.app.store.append(CHAT, [
        {
          event: {
            v: 1,
            event_type: "session",
            role: "user",
            parts: [{ kind: "text", text: `q${i}` }],
          },
        },
        {
          event: {
            v: 1,
            event_type: "session",
            role: "model",
            parts: [{ kind: "text", text: `a${i}` }],
          },
        },
      ]);
    }
  }

  it("/clear leaves the conversation and says nothing", async () => {
    await storeTurns(1);
    expect(await runCommand("/clear")).toBeInstanceOf(LeaseLostError);
    expect((await h.app.store.stats(CHAT)).events).toBe(2);
    expect(telegram.sent).toEqual([]);
  });

  it("/compact writes no summary once the summary call returns", async () => {
    await storeTurns(2);
    h.fake.scriptFor(SUMMARY_MODEL, text("a summary nobody may store"));
    expect(await runCommand("/compact")).toBeInstanceOf(LeaseLostError);
    expect(h.fake.requests.filter((r) => r.model === SUMMARY_MODEL)).toHaveLength(1);
    expect((await h.app.store.stats(CHAT)).compactions).toBe(0);
    expect(telegram.sent).toEqual([]);
  });

  it("a message, whose answer runs once the middleware has returned, fails the update too", async () => {
    const before = (await h.app.store.stats(CHAT)).events;
    expect(await runCommand("hello")).toBeInstanceOf(LeaseLostError);
    expect((await h.app.store.stats(CHAT)).events).toBe(before);
    expect(telegram.sent).toEqual([]);
  });
});

describe("a turn whose compaction notice Telegram refuses", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  beforeAll(async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  it("still answers, and logs the notice it could not send", async () => {
    for (const q of ["q1", "q2"]) {
      h.fake.scriptFor(CHAT_MODEL, text(`a ${q}`));
      await h.app.agent.runTurn(CHAT, { text: q });
    }
    h.fake.scriptFor(SUMMARY_MODEL, text("a summary"));
    // The answer comes later than the notice's refusal, which then waits for the turn to end.
    h.fake.scriptFor(CHAT_MODEL, { ...text("the answer"), delayMs: 300 });
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: message thread not found",
    });
    expect(await handle(h, telegram, 900, "q3")).toBeUndefined();
    expect(telegram.sent.map((m) => m.plain_text)).toEqual(["the answer"]);
    expect(h.logs.some((l) => l.msg === "could not send the compaction notice")).toBe(true);
  });
});

describe("the bot's calls while Telegram cannot be reached", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  beforeAll(async () => {
    h = await startHarness();
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  /** The bot on a port where nothing listens yet (connections refused: Telegram is away). */
  async function botWhileAway() {
    const port = await refusingPort();
    const created = botOnHarness(h, telegram, {
      allowedUserIds: [USER],
      settings: { model: CHAT_MODEL, maxEvents: 30, maxTokens: 0, timeZone: "UTC" },
      apiRoot: `http://127.0.0.1:${port}`,
      networkRetry: { baseMs: 20, maxMs: 40 },
    });
    const { hostname, port: fakePort } = new URL(telegram.apiRoot);
    /** Telegram is back: the port now leads to the fake. */
    const back = () => startTcpProxy({ host: hostname, port: Number(fakePort) }, { port });
    return { ...created, back };
  }
  const unreachable = () => h.logs.filter((l) => l.msg === "cannot reach Telegram; trying again");

  it("are tried again, waits capped, until Telegram answers, and go through once", async () => {
    const { bot, back } = await botWhileAway();
    const before = unreachable().length;
    const sending = bot.api.sendMessage(USER, "back online");
    // auto-retry's own waits for these began at 3 s; capped at 40 ms here, several go by at once.
    await expect
      .poll(() => unreachable().length - before, { timeout: 2_000 })
      .toBeGreaterThanOrEqual(3);
    const proxy = await back();
    try {
      expect((await sending).text).toBe("back online");
      expect(telegram.sent.filter((m) => m.plain_text === "back online")).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("but long polling's are not: each getUpdates is tried once, its loop waits and asks again", async () => {
    const { pollingApi } = await botWhileAway();
    const before = unreachable().length;
    await expect(pollingApi.getUpdates({ timeout: 0 })).rejects.toThrow(
      /Network request for 'getUpdates' failed/,
    );
    expect(unreachable().length - before).toBe(1);
  });
});
