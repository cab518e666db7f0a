import { Api } from "grammy";
import type { Update } from "grammy/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startPolling } from "../../src/telegram/polling.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import { refusingPort } from "../helpers/refusing-port.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";

const FAILED = "polling failed; retrying";

describe("startPolling", () => {
  let telegram: FakeTelegram;
  beforeEach(async () => {
    telegram = await startFakeTelegram();
  });
  afterEach(() => telegram.close());

  function poll(random: () => number, apiRoot = telegram.apiRoot) {
    const { logger, lines } = captureLogger();
    const ingested: Update[] = [];
    const polling = startPolling({
      api: new Api(telegram.token, { apiRoot }),
      ingest: async (update) => {
        ingested.push(update);
        return "stored";
      },
      logger,
      allowedUpdates: ["message"],
      random,
    });
    const waits = () => lines.filter((l) => l.msg === FAILED).map((l) => l.retry_in_ms);
    return { polling, ingested, waits };
  }

  it("backs off with jitter after failures, waits out a flood wait, then takes the updates", async () => {
    telegram.failNext("getUpdates", { error_code: 502 }, 2);
    telegram.failNext("getUpdates", { error_code: 429, retry_after: 1 });
    const update = telegram.pushText({ userId: 7, text: "hello" });
    const { polling, ingested, waits } = poll(() => 0.01);
    try {
      await vi.waitFor(() => expect(ingested).toHaveLength(1), { timeout: 5_000 });
      expect(ingested[0]?.update_id).toBe(update.update_id);
      // Up to 1 s and 2 s drawn at 0.01, then Telegram's second plus a hundredth of its tenth.
      expect(waits()).toEqual([10, 20, 1_001]);
    } finally {
      await polling.stop();
    }
  });

  it("starts the backoff over after a poll that worked", async () => {
    telegram.failNext("getUpdates", { error_code: 502 });
    const { polling, ingested, waits } = poll(() => 0.5);
    try {
      await vi.waitFor(() => expect(waits()).toEqual([500]));
      // The first poll after the failure works (it waits for updates); the next failure is
      // again the first of its run.
      await vi.waitFor(() =>
        expect(telegram.calls.filter((c) => c.method === "getUpdates")).toHaveLength(2),
      );
      telegram.failNext("getUpdates", { error_code: 502 });
      telegram.pushText({ userId: 7, text: "wake the long poll" });
      await vi.waitFor(() => expect(waits()).toEqual([500, 500]), { timeout: 5_000 });
      await vi.waitFor(() => expect(ingested).toHaveLength(1), { timeout: 5_000 });
    } finally {
      await polling.stop();
    }
  });

  it("stops at once during a wait", async () => {
    telegram.failNext("getUpdates", { error_code: 429, retry_after: 30 });
    const { polling, waits } = poll(() => 0);
    await vi.waitFor(() => expect(waits()).toEqual([30_000]));
    // Were the wait not cut short, this would outlast the test's timeout.
    await polling.stop();
  });

  it("keeps asking, at most 30 s apart, while Telegram cannot be reached, and takes the update once back", async () => {
    const port = await refusingPort();
    const update = telegram.pushText({ userId: 7, text: "sent during the outage" });
    const { polling, ingested, waits } = poll(() => 0.999, `http://127.0.0.1:${port}`);
    let proxy: TcpProxy | undefined;
    try {
      // Network failures reach the loop, whose waits double from 1 s up to its 30 s.
      await vi.waitFor(() => expect(waits()).toHaveLength(2), { timeout: 5_000 });
      expect(waits()).toEqual([999, 1_998]);
      const { hostname, port: fakePort } = new URL(telegram.apiRoot);
      proxy = await startTcpProxy({ host: hostname, port: Number(fakePort) }, { port });
      await vi.waitFor(() => expect(ingested.map((u) => u.update_id)).toEqual([update.update_id]), {
        timeout: 10_000,
      });
    } finally {
      await polling.stop();
      await proxy?.close();
    }
  });
});
