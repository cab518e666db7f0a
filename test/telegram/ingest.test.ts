import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/answer/delivery.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber, type Logger } from "../../src/logger.js";
import { createInbox, type StopTarget } from "../../src/queue/inbox.js";
import { createRunningAnswers } from "../../src/queue/running-answers.js";
import {
  createIngest,
  type Ingest,
  NOTHING_TO_STOP,
  REJECTION_QUIET_MS,
  STOP_FAILED,
} from "../../src/telegram/ingest.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import { eventually } from "../helpers/service-process.js";

const ALLOWED = 1;

/** The ingest of a service whose only allowed user is ALLOWED, over an in-memory inbox. */
function ingestFor(
  telegram: FakeTelegram,
  handle: DatabaseHandle,
  logger: Logger,
  more: Partial<Parameters<typeof createIngest>[0]>,
): Ingest {
  return createIngest({
    inbox: createInbox({
      db: handle.db,
      kind: "sqlite",
      workerId: "w",
      leaseMs: 30_000,
      scrub: createScrubber([]),
    }),
    delivery: createDelivery({
      api: new Api(telegram.token, { apiRoot: telegram.apiRoot }),
      logger,
    }),
    allowedUserIds: [ALLOWED],
    bot: { id: telegram.bot.id, username: telegram.bot.username },
    logger,
    onStored: () => {},
    ...more,
  });
}

describe("ingest of messages from users who are not allowed", () => {
  let telegram: FakeTelegram;
  let handle: DatabaseHandle;
  let ingest: Ingest;
  let clock = 1_000_000;
  let updateId = 0;
  const { logger, lines } = captureLogger();

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    handle = openDatabase({ kind: "sqlite", path: ":memory:" });
    await migrateToLatest(handle.db, logger);
    ingest = ingestFor(telegram, handle, logger, { now: () => clock });
  });
  afterAll(async () => {
    await handle.close();
    await telegram.close();
  });

  const from = (userId: number) =>
    ingest(buildTextUpdate({ updateId: ++updateId, messageId: updateId, text: "hi", userId }));
  const repliesTo = (userId: number) => telegram.sent.filter((m) => m.chat_id === userId);
  /** Whether ingesting a stranger's message started a reply: each says which, as it happens. */
  async function replied(userId: number): Promise<boolean> {
    expect(await from(userId)).toBe("rejected");
    const said = lines.at(-1)?.msg;
    expect(said).toMatch(/^message from a user not on the allowlist/);
    return !said?.endsWith("who was already told");
  }

  it("tells each of them once an hour, however often they write", async () => {
    expect(await replied(7)).toBe(true);
    expect(await replied(8)).toBe(true);
    expect(await replied(7)).toBe(false);
    clock += REJECTION_QUIET_MS - 1;
    expect(await replied(7)).toBe(false);
    clock += 1;
    expect(await replied(7)).toBe(true);
    await eventually(() => repliesTo(7).length === 2 && repliesTo(8).length === 1);
  });
});

describe("ingest of stops (/stop and the draft's button)", () => {
  let telegram: FakeTelegram;
  let handle: DatabaseHandle;
  let updateId = 0;
  const { logger } = captureLogger();

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    handle = openDatabase({ kind: "sqlite", path: ":memory:" });
    await migrateToLatest(handle.db, logger);
  });
  afterAll(async () => {
    await handle.close();
    await telegram.close();
  });

  /** An ingest whose replicas answer `elsewhere` (a value, or a failure) and record what they got. */
  function ingestWith(elsewhere: boolean | Error) {
    const asked: StopTarget[] = [];
    const answers = createRunningAnswers();
    const ingest = ingestFor(telegram, handle, logger, {
      answers,
      stopElsewhere: async (target) => {
        asked.push(target);
        if (elsewhere instanceof Error) throw elsewhere;
        return elsewhere;
      },
    });
    return { ingest, asked, answers };
  }
  const stopCommand = () =>
    buildTextUpdate({ updateId: ++updateId, messageId: updateId, text: "/stop", userId: ALLOWED });
  const said = () => telegram.sent.filter((m) => m.chat_id === ALLOWED).map((m) => m.plain_text);

  it("stops an answer written here without asking the other replicas", async () => {
    const { ingest, asked, answers } = ingestWith(false);
    const running = answers.start(String(ALLOWED), ALLOWED, 5, 5);
    expect(await ingest(stopCommand())).toBe("stopped");
    expect(running.signal.aborted).toBe(true);
    expect(asked).toEqual([]);
  });

  it("passes a stop on to the replicas, and says there is nothing to stop only when none writes an answer", async () => {
    const before = said().length;
    const elsewhere = ingestWith(true);
    expect(await elsewhere.ingest(stopCommand())).toBe("stopped");
    const pressed = telegram.pressStop(ALLOWED, 9);
    expect(await elsewhere.ingest(pressed)).toBe("stopped");
    expect(elsewhere.asked).toEqual([
      { conversation: String(ALLOWED) },
      { chatId: ALLOWED, draftId: 9 },
    ]);
    const nowhere = ingestWith(false);
    await nowhere.ingest(stopCommand());
    const failing = ingestWith(new Error("connection refused"));
    await failing.ingest(stopCommand());
    await eventually(() => said().length === before + 2);
    expect(said().slice(before).sort()).toEqual([NOTHING_TO_STOP, STOP_FAILED].sort());
  });
});
