import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createInbox } from "../../src/queue/inbox.js";
import { createDelivery } from "../../src/telegram/delivery.js";
import { createIngest, type Ingest, REJECTION_QUIET_MS } from "../../src/telegram/ingest.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import { eventually } from "../helpers/service-process.js";

const ALLOWED = 1;

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
    ingest = createIngest({
      inbox: createInbox({ db: handle.db, kind: "sqlite", workerId: "w", leaseMs: 30_000 }),
      delivery: createDelivery({
        api: new Api(telegram.token, { apiRoot: telegram.apiRoot }),
        logger,
      }),
      allowedUserIds: [ALLOWED],
      bot: { id: telegram.bot.id, username: telegram.bot.username },
      logger,
      onStored: () => {},
      now: () => clock,
    });
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
