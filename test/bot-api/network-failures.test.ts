import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/answer/delivery.js";
import { grammyFetch } from "../../src/bot-api/grammy-fetch.js";
import { logNetworkFailures, retryNetworkFailures } from "../../src/bot-api/network-failures.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import { refusingPort } from "../helpers/refusing-port.js";

const CHAT = 4711;
const UNREACHABLE = "cannot reach Telegram; trying again";

/** An Api as the bot builds it (Node's fetch through grammyFetch), with the network-failure log first. */
function watchedApi(apiRoot: string, token: string, timeoutSeconds?: number) {
  const { logger, lines } = captureLogger();
  const api = new Api(token, {
    apiRoot,
    timeoutSeconds,
    fetch: grammyFetch,
  });
  // Outermost: sees each call's outcome after the log has had its say.
  const outcomes: string[] = [];
  api.config.use(async (prev, method, payload, signal) => {
    try {
      return await prev(method, payload, signal);
    } catch (error) {
      outcomes.push(`${method} failed`);
      throw error;
    }
  });
  api.config.use(logNetworkFailures(logger, apiRoot));
  return { api, lines, outcomes };
}

describe("Telegram network failures in the log", () => {
  let telegram: FakeTelegram;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
  });
  afterAll(() => telegram.close());

  it("says nothing when the turn ends the typing request it no longer needs", async () => {
    const { api, lines, outcomes } = watchedApi(telegram.apiRoot, telegram.token);
    const held = telegram.holdNext("sendChatAction");
    const stop = createDelivery({ api, logger: captureLogger().logger }).showTyping(CHAT);
    await held.arrived;
    stop();
    await expect.poll(() => outcomes).toEqual(["sendChatAction failed"]);
    expect(lines.filter((l) => l.msg === UNREACHABLE)).toEqual([]);
  });

  it("names a refused connection", async () => {
    const apiRoot = `http://127.0.0.1:${await refusingPort()}`;
    const { api, lines } = watchedApi(apiRoot, telegram.token);
    await expect(api.getMe()).rejects.toThrow(/Network request for 'getMe' failed/);
    expect(lines.find((l) => l.msg === UNREACHABLE)).toMatchObject({
      method: "getMe",
      api_root: apiRoot,
      cause: "connection refused (ECONNREFUSED)",
    });
  });

  it("names a failure its table does not know by the innermost error's words", async () => {
    // fetch refuses some ports outright (6000 is X11's): no socket is ever opened.
    const apiRoot = "http://127.0.0.1:6000";
    const { api, lines } = watchedApi(apiRoot, telegram.token);
    await expect(api.getMe()).rejects.toThrow(/Network request for 'getMe' failed/);
    expect(lines.find((l) => l.msg === UNREACHABLE)?.cause).toBe("bad port");
  });

  it("names a failed DNS lookup", async () => {
    const apiRoot = "http://koroku-no-such-host.invalid";
    const { api, lines } = watchedApi(apiRoot, telegram.token);
    await expect(api.getMe()).rejects.toThrow(/Network request for 'getMe' failed/);
    expect(lines.find((l) => l.msg === UNREACHABLE)?.cause).toMatch(
      /^DNS lookup failed: .* \((ENOTFOUND|EAI_AGAIN)\)$/,
    );
  });

  it("names a timeout", async () => {
    const { api, lines } = watchedApi(telegram.apiRoot, telegram.token, 0.2);
    const held = telegram.holdNext("getMe");
    await expect(api.getMe()).rejects.toThrow(/Network request for 'getMe' failed/);
    held.release();
    expect(lines.find((l) => l.msg === UNREACHABLE)?.cause).toBe(
      "Request to 'getMe' timed out after 0.2 seconds",
    );
  });
});

describe("Telegram calls that got no answer, tried again", () => {
  let telegram: FakeTelegram;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
  });
  afterAll(() => telegram.close());

  /** An Api whose calls go to a port nobody listens on, tried again every few milliseconds. */
  async function unreachableApi() {
    const watched = watchedApi(`http://127.0.0.1:${await refusingPort()}`, telegram.token);
    watched.api.config.use(retryNetworkFailures({ baseMs: 10, maxMs: 20 }));
    return watched;
  }

  it("stop when their caller gives up, and are not sent later", async () => {
    const { api, outcomes } = await unreachableApi();
    const stop = new AbortController();
    const sending = api.sendMessage(CHAT, "never", {}, stop.signal as never);
    await expect.poll(() => outcomes.length).toBeGreaterThanOrEqual(2);
    stop.abort();
    await expect(sending).rejects.toThrow(/Network request for 'sendMessage' failed/);
    const tries = outcomes.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(outcomes).toHaveLength(tries);
  });

  it("an answer Telegram gave, a refusal, is not tried again", async () => {
    const { api } = watchedApi(telegram.apiRoot, telegram.token);
    api.config.use(retryNetworkFailures({ baseMs: 10, maxMs: 20 }));
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: chat not found",
    });
    await expect(api.sendMessage(CHAT, "once")).rejects.toThrow(/chat not found/);
    expect(telegram.calls.filter((c) => c.body.text === "once")).toHaveLength(1);
  });
});
