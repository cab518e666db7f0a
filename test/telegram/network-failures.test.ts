import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/answer/delivery.js";
import { grammyFetch } from "../../src/telegram/grammy-fetch.js";
import { logNetworkFailures } from "../../src/telegram/network-failures.js";
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
