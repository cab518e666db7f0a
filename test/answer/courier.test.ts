import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { autoRetry } from "@grammyjs/auto-retry";
import SQLite from "better-sqlite3";
import { Api, GrammyError, HttpError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveMessagesOf } from "../../src/answer/answer-delivery.js";
import { type Courier, startCourier } from "../../src/answer/courier.js";
import { createDelivery, type DeliveryProgress } from "../../src/answer/delivery.js";
import { startLiveAnswer } from "../../src/answer/live-answer.js";
import { toolFileSender } from "../../src/answer/tool-file-sender.js";
import { networkCause, retryNetworkFailures } from "../../src/bot-api/network-failures.js";
import { scrubOutgoing } from "../../src/bot-api/scrub-outgoing.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type Inbox, type Lease, LeaseLostError } from "../../src/queue/inbox.js";
import { sha256Hex } from "../../src/session/attachments.js";
import type { SentAs } from "../../src/tools/registry.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { pngImage } from "../helpers/images.js";
import { captureLogger } from "../helpers/logs.js";

const CHAT = 4242;

/** The progress deliverAnswer gives a lease: the courier records, the lease is told what it did. */
const progressOf = (lease: Lease, rowsSeen: (number | undefined)[] = []): DeliveryProgress => ({
  alreadySent: 0,
  statement: (count) => lease.deliveredStatement(count),
  sent: (count, rows) => {
    rowsSeen.push(rows);
    return lease.recordDelivered(count, rows);
  },
});

describe.each(DATABASE_KINDS)("courier on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let telegram: FakeTelegram;
  let courier: Courier;
  let inbox: Inbox;
  let nextUpdate = 1;
  const { logger } = captureLogger();

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
    telegram = await startFakeTelegram();
    courier = startCourier({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      database: testDb.target,
      logger,
    });
    inbox = createInbox({
      db: handle.db,
      kind: handle.kind,
      workerId: "w",
      leaseMs: 30_000,
      scrub: createScrubber([]),
    });
  });
  afterAll(async () => {
    await courier?.stop();
    await telegram?.close();
    await handle?.close();
    await testDb?.dispose();
  });

  /**
   * A Bot API with the courier innermost and, around it, what createBot puts there (but for the
   * retries when `retry` is false: a network failure is tried again without end).
   */
  const deliveryVia = ({
    through = courier,
    apiRoot = telegram.apiRoot,
    rich = false,
    retry = true,
  } = {}) => {
    const api = new Api(telegram.token, { apiRoot });
    api.config.use(scrubOutgoing(["secret-token"]));
    if (retry) {
      api.config.use(retryNetworkFailures());
      api.config.use(
        autoRetry({ maxDelaySeconds: 30, maxRetryAttempts: 3, rethrowHttpErrors: true }),
      );
    }
    return createDelivery({ api, logger, courier: through, richMessages: rich });
  };

  async function claimedLease(): Promise<{ updateId: number; lease: Lease }> {
    const updateId = nextUpdate++;
    await inbox.add(updateId, `chat-${updateId}`, { update_id: updateId });
    const item = await inbox.claim();
    if (!item) throw new Error("expected an update to claim");
    return { updateId, lease: inbox.leaseOf(item) };
  }

  const deliveredOf = async (updateId: number) =>
    (
      await handle.db
        .selectFrom("inbox")
        .select("delivered")
        .where("update_id", "=", updateId)
        .executeTakeFirstOrThrow()
    ).delivered;

  it("records each message of an answer on its own connection as Telegram accepts it", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    const before = telegram.sent.length;
    await deliveryVia().sendHtml(
      CHAT,
      `${"a ".repeat(3000)}\n\n${"b ".repeat(3000)}`,
      undefined,
      progressOf(lease, rows),
    );
    const messages = telegram.sent.length - before;
    expect(messages).toBeGreaterThan(1);
    // Each record ran on the courier's connection: the lease was told so and ran none itself.
    expect(rows).toEqual(Array(messages).fill(1));
    expect(await deliveredOf(updateId)).toBe(messages);
    await inbox.finish(await lastClaim(updateId));
  });

  it("keeps the Api's transformers: a secret in a carried message is scrubbed", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    await deliveryVia().sendHtml(
      CHAT,
      "the key is secret-token",
      undefined,
      progressOf(lease, rows),
    );
    expect(rows).toEqual([1]);
    expect(telegram.sent.at(-1)?.text).not.toContain("secret-token");
    await inbox.finish(await lastClaim(updateId));
  });

  it("records each file of an answer on its own connection, as a photo or a document", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    const photo = pngImage(64, 48, 500);
    const before = telegram.sentFiles.length;
    await deliveryVia().sendFiles(
      CHAT,
      [
        { bytes: photo, name: "drawn.png", mimeType: "image/png", caption: "a drawing" },
        { bytes: Buffer.from("a,b\n1,2\n"), name: "table.csv", mimeType: "text/csv" },
      ],
      undefined,
      progressOf(lease, rows),
    );
    const sent = telegram.sentFiles.slice(before);
    expect(sent.map((f) => [f.method, f.file_name, f.caption])).toEqual([
      ["sendPhoto", "drawn.png", "a drawing"],
      ["sendDocument", "table.csv", undefined],
    ]);
    expect(sent[0]?.bytes.equals(photo)).toBe(true);
    expect(rows).toEqual([1, 1]);
    expect(await deliveredOf(updateId)).toBe(2);
    await inbox.finish(await lastClaim(updateId));
  });

  it("records a photo Telegram refuses with the document it goes as instead", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    telegram.failNext("sendPhoto", {
      error_code: 400,
      description: "Bad Request: IMAGE_PROCESS_FAILED",
    });
    const photo = pngImage(64, 48, 500);
    await deliveryVia().sendFiles(
      CHAT,
      [{ bytes: photo, name: "drawn.png", mimeType: "image/png" }],
      undefined,
      progressOf(lease, rows),
    );
    expect(telegram.sentFiles.at(-1)?.method).toBe("sendDocument");
    expect(telegram.sentFiles.at(-1)?.bytes.equals(photo)).toBe(true);
    expect(rows).toEqual([1]);
    expect(await deliveredOf(updateId)).toBe(1);
    await inbox.finish(await lastClaim(updateId));
  });

  it("records each file send_file sends with its call, as what Telegram took it as, on its own connection", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    const { sendFile } = toolFileSender({
      delivery: deliveryVia(),
      logger,
      chatId: CHAT,
      threadId: undefined,
      lease: {
        ...lease,
        recordToolFiles: (files, changed) => {
          rows.push(changed);
          return lease.recordToolFiles(files, changed);
        },
      },
    });
    const photo = pngImage(64, 48, 500);
    const table = Buffer.from("a,b\n1,2\n");
    const callOf =
      (call: number, file: Buffer, mimeType: string, name: string) => (sentAs: SentAs) => ({
        event: 7,
        call,
        response: { output: { sent: sentAs, path: name } },
        files: [
          {
            kind: "media" as const,
            media: sentAs,
            sha256: sha256Hex(file),
            mimeType,
            size: file.length,
            name,
          },
        ],
      });
    telegram.failNext("sendPhoto", {
      error_code: 400,
      description: "Bad Request: IMAGE_PROCESS_FAILED",
    });
    const sentAs = [
      await sendFile?.(
        { bytes: photo, name: "drawn.png", mimeType: "image/png" },
        callOf(0, photo, "image/png", "drawn.png"),
      ),
      await sendFile?.(
        { bytes: table, name: "table.csv", mimeType: "text/csv" },
        callOf(1, table, "text/csv", "table.csv"),
      ),
    ];
    expect(sentAs).toEqual(["document", "document"]);
    // Both records ran on the courier's connection, each with every file sent so far.
    expect(rows).toEqual([1, 1]);
    const row = await handle.db
      .selectFrom("inbox")
      .select("tool_files")
      .where("update_id", "=", updateId)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(row.tool_files ?? "null")).toEqual([
      callOf(0, photo, "image/png", "drawn.png")("document"),
      callOf(1, table, "text/csv", "table.csv")("document"),
    ]);
    await inbox.finish(await lastClaim(updateId));
  });

  it("records the messages an edited live answer is shown in, with the ids Telegram gave them", async () => {
    const { updateId, lease } = await claimedLease();
    const recorded: [readonly number[], number | undefined][] = [];
    const live = startLiveAnswer({
      api: new Api(telegram.token, { apiRoot: telegram.apiRoot }),
      delivery: deliveryVia(),
      logger,
      chatId: CHAT,
      privateChat: false,
      mode: "edit",
      draftId: updateId,
      editIntervalMs: 0,
      ...liveMessagesOf(lease),
      recordMessages: (ids, rows) => {
        recorded.push([ids, rows]);
        return lease.recordLiveMessages(ids, rows);
      },
    });
    live.progress.text("The first words");
    const long = `${"a ".repeat(1500)}\n\n${"b ".repeat(1500)}`;
    await live.finish(long);
    const ids = recorded.at(-1)?.[0] ?? [];
    expect(ids).toHaveLength(2);
    // Both messages were recorded by the courier as Telegram took them: first one, then both.
    expect(recorded).toEqual([
      [[ids[0]], 1],
      [ids, 1],
    ]);
    const row = await handle.db
      .selectFrom("inbox")
      .select("live_messages")
      .where("update_id", "=", updateId)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(row.live_messages ?? "null")).toEqual(ids);
    expect(telegram.sent.filter((m) => ids.includes(m.message_id)).map((m) => m.text?.[0])).toEqual(
      ["a", "b"],
    );
    await inbox.finish(await lastClaim(updateId));
  });

  it("records a message Telegram accepts on a retry, after a 429", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    telegram.failNext("sendMessage", { error_code: 429, retry_after: 0 });
    await deliveryVia().sendHtml(CHAT, "after a wait", undefined, progressOf(lease, rows));
    expect(telegram.sent.at(-1)?.text).toBe("after a wait");
    expect(rows).toEqual([1]);
    expect(await deliveredOf(updateId)).toBe(1);
    await inbox.finish(await lastClaim(updateId));
  });

  it("records a refused rich message with the last message of its HTML stand-in", async () => {
    const { updateId, lease } = await claimedLease();
    const rows: (number | undefined)[] = [];
    telegram.failNext("sendRichMessage", { error_code: 400, description: "Bad Request: no" });
    const first = telegram.holdNext("sendMessage");
    const last = telegram.holdNext("sendMessage");
    const before = telegram.sent.length;
    const sending = deliveryVia({ rich: true }).sendMarkdown(
      CHAT,
      `# Title\n\n${"word ".repeat(1000)}`,
      undefined,
      progressOf(lease, rows),
    );
    await first.arrived;
    first.release();
    await last.arrived;
    // The first of the two messages carried no record: the rich message is not out yet.
    expect(await deliveredOf(updateId)).toBe(0);
    last.release();
    await sending;
    expect(telegram.sent.length - before).toBe(2);
    expect(rows).toEqual([1]);
    expect(await deliveredOf(updateId)).toBe(1);
    await inbox.finish(await lastClaim(updateId));
  });

  it("sends as grammY does once stopped, leaving the record to the caller", async () => {
    const { updateId, lease } = await claimedLease();
    const stopped = startCourier({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      database: testDb.target,
      logger,
    });
    await stopped.stop();
    const rows: (number | undefined)[] = [];
    await deliveryVia({ through: stopped }).sendHtml(
      CHAT,
      "after the stop",
      undefined,
      progressOf(lease, rows),
    );
    expect(telegram.sent.at(-1)?.text).toBe("after the stop");
    expect(rows).toEqual([undefined]);
    expect(await deliveredOf(updateId)).toBe(1);
    await inbox.finish(await lastClaim(updateId));
  });

  /** The grammY call `live` stands in for: a test fails if it is made. */
  const notHere: Parameters<Courier["live"]>[0] = () => {
    throw new Error("the live call was made on this thread");
  };

  it("sends the live view's calls (typing, drafts) on the thread, and only those", async () => {
    const typing = await courier.live(notHere, "sendChatAction", {
      chat_id: CHAT,
      action: "typing",
    });
    expect(typing).toEqual({ ok: true, result: true });
    const draft = await courier.live(notHere, "sendMessageDraft", {
      chat_id: CHAT,
      draft_id: 7,
      text: "being written",
    });
    expect(draft).toEqual({ ok: true, result: true });
    expect(telegram.drafts.at(-1)).toMatchObject({ chat_id: CHAT, plain_text: "being written" });
    const passed: string[] = [];
    await courier.live(
      async (method) => {
        passed.push(method);
        return { ok: true, result: true } as never;
      },
      "getMe",
      {},
    );
    expect(passed).toEqual(["getMe"]);
  });

  it("aborts a live call on the thread when its signal aborts", async () => {
    const held = telegram.holdNext("sendChatAction");
    const controller = new AbortController();
    const signal = controller.signal as unknown as Parameters<Courier["live"]>[3];
    const calling = courier
      .live(notHere, "sendChatAction", { chat_id: CHAT, action: "typing" }, signal)
      .catch((error: unknown) => error);
    await held.arrived;
    controller.abort();
    await held.hungUp;
    expect(await calling).toBeInstanceOf(HttpError);
  });

  it("records nothing for a message Telegram refuses, which fails as grammY fails it", async () => {
    const { updateId, lease } = await claimedLease();
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: chat not found",
    });
    const sending = deliveryVia().sendHtml(CHAT, "hello", undefined, progressOf(lease));
    await expect(sending).rejects.toBeInstanceOf(GrammyError);
    expect(await deliveredOf(updateId)).toBe(0);
    await inbox.finish(await lastClaim(updateId));
  });

  it("stops the run when its claim is gone: the record changes nothing", async () => {
    const { updateId, lease } = await claimedLease();
    await inbox.finish(await lastClaim(updateId));
    const before = telegram.sent.length;
    const sending = deliveryVia().sendHtml(CHAT, "late", undefined, progressOf(lease));
    await expect(sending).rejects.toBeInstanceOf(LeaseLostError);
    expect(telegram.sent.length - before).toBe(1);
    expect(lease.lost).toBe(true);
  });

  it("fails a call that reaches no server with grammY's HttpError, naming the cause", async () => {
    const { updateId, lease } = await claimedLease();
    const closed = await startFakeTelegram();
    const apiRoot = closed.apiRoot;
    await closed.close();
    const nowhere = startCourier({
      token: telegram.token,
      apiRoot,
      database: testDb.target,
      logger,
    });
    const error = await deliveryVia({ through: nowhere, apiRoot, retry: false })
      .sendHtml(CHAT, "nobody there", undefined, progressOf(lease))
      .catch((e: unknown) => e)
      .finally(() => nowhere.stop());
    expect(error).toBeInstanceOf(HttpError);
    expect(networkCause(error)).toBe("connection refused (ECONNREFUSED)");
    expect(await deliveredOf(updateId)).toBe(0);
    await inbox.finish(await lastClaim(updateId));
  });

  async function lastClaim(updateId: number) {
    const row = await handle.db
      .selectFrom("inbox")
      .select(["update_id", "attempts"])
      .where("update_id", "=", updateId)
      .executeTakeFirstOrThrow();
    return { updateId: row.update_id, attempts: row.attempts };
  }
});

/** A Bot API that accepts every message, in a process of its own, so that it answers while this one is blocked. */
async function startAcceptingTelegram(): Promise<{ apiRoot: string; process: ChildProcess }> {
  const script = `
    const http = require("node:http");
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ ok: true, result: {
          message_id: 7, date: 0, chat: { id: ${CHAT}, type: "private", first_name: "A" }, text: "hi",
        } }));
      });
    });
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));
  `;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const [chunk] = (await once(child.stdout, "data")) as [Buffer];
  return { apiRoot: `http://127.0.0.1:${chunk.toString().trim()}`, process: child };
}

describe("courier while the service's event loop is blocked", () => {
  it("has the record committed before this thread reads Telegram's reply", async () => {
    const testDb = await createTestDatabase("sqlite");
    const { logger } = captureLogger();
    const handle = openDatabase(testDb.target);
    const telegram = await startAcceptingTelegram();
    const courier = startCourier({
      token: "1:x",
      apiRoot: telegram.apiRoot,
      database: testDb.target,
      logger,
    });
    try {
      await migrateToLatest(handle.db, logger);
      const inbox = createInbox({
        db: handle.db,
        kind: "sqlite",
        workerId: "w",
        leaseMs: 30_000,
        scrub: createScrubber([]),
      });
      await inbox.add(1, String(CHAT), { update_id: 1 });
      const item = await inbox.claim();
      if (!item) throw new Error("expected an update to claim");
      const api = new Api("1:x", { apiRoot: telegram.apiRoot });
      const delivery = createDelivery({ api, logger, courier });
      const sending = delivery.sendHtml(CHAT, "hi", undefined, progressOf(inbox.leaseOf(item)));
      // The call is handed to the courier's thread once this turn's promises have run.
      await new Promise((resolve) => setImmediate(resolve));
      if (testDb.target.kind !== "sqlite") throw new Error("expected a SQLite file");
      const reader = new SQLite(testDb.target.path, { readonly: true });
      const delivered = reader.prepare("select delivered from inbox where update_id = 1").pluck();
      // Blocks this thread, as a busy service's would be, until the record shows (or 20 s pass):
      // nothing this thread would do can have made it.
      let seen: unknown = 0;
      for (const until = Date.now() + 20_000; seen !== 1 && Date.now() < until; ) {
        seen = delivered.get();
      }
      reader.close();
      expect(seen).toBe(1);
      await sending;
    } finally {
      await courier.stop();
      telegram.process.kill();
      await handle.close();
      await testDb.dispose();
    }
  });
});
