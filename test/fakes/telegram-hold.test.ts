import { Bot } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";

let fake: FakeTelegram;

afterEach(async () => {
  await fake.close();
});

describe("fake Telegram: held calls", () => {
  it("keeps the next call of a method open until released", async () => {
    fake = await startFakeTelegram();
    const api = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } }).api;
    const held = fake.holdNext("sendMessage");
    const sending = api.sendMessage(1, "held");
    const call = await held.arrived;
    expect(call.body.text).toBe("held");
    expect(fake.sent).toHaveLength(0);

    held.release();
    await expect(sending).resolves.toMatchObject({ text: "held" });
    await expect(api.sendMessage(1, "next")).resolves.toMatchObject({ text: "next" });
    expect(fake.sent.map((m) => m.plain_text)).toEqual(["held", "next"]);
  });

  it("never runs a held call whose client hung up, and holds only the next call", async () => {
    fake = await startFakeTelegram();
    const held = fake.holdNext("sendMessage");
    const controller = new AbortController();
    const request = fetch(`${fake.apiRoot}/bot${fake.token}/sendMessage`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chat_id: 1, text: "lost" }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await held.arrived;
    controller.abort();
    expect(await request).toBeInstanceOf(Error);
    await held.hungUp;

    const api = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } }).api;
    await api.sendMessage(1, "after");
    expect(fake.sent.map((m) => m.plain_text)).toEqual(["after"]);
    expect(fake.calls.find((c) => c.body.text === "lost")?.response).toBeUndefined();
  });
});
