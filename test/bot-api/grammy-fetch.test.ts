import { createServer } from "node:http";
import { Api, HttpError } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { grammyFetch } from "../../src/bot-api/grammy-fetch.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";

let fake: FakeTelegram;

afterEach(async () => {
  await fake.close();
});

describe("grammY on Node's fetch", () => {
  it("gets its answers: grammY's own abort signal is not refused", async () => {
    fake = await startFakeTelegram();
    const api = new Api(fake.token, { apiRoot: fake.apiRoot, fetch: grammyFetch });
    await expect(api.sendMessage(1, "hello")).resolves.toMatchObject({ text: "hello" });
    expect(fake.sent.map((m) => m.plain_text)).toEqual(["hello"]);
  });

  it("still aborts a call when its caller's signal does", async () => {
    fake = await startFakeTelegram();
    const api = new Api(fake.token, { apiRoot: fake.apiRoot, fetch: grammyFetch });
    const held = fake.holdNext("sendMessage");
    const controller = new AbortController();
    // grammY types its signal after the abort-controller package; Node's is one at run time.
    const signal = controller.signal as unknown as Parameters<Api["sendMessage"]>[3];
    const sending = api.sendMessage(1, "lost", {}, signal).catch((e: unknown) => e);
    await held.arrived;
    controller.abort();
    expect(await sending).toBeInstanceOf(Error);
    await held.hungUp;
    expect(fake.sent).toEqual([]);
  });

  it("refuses a redirect: the call fails and the place it points to is not asked", async () => {
    const asked: string[] = [];
    const server = createServer((req, res) => {
      req.resume();
      asked.push(req.url ?? "");
      if (req.url?.startsWith("/moved")) res.writeHead(307, { location: "/elsewhere" }).end();
      else res.end('{"ok":true,"result":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const api = new Api("1:token", {
        apiRoot: `http://127.0.0.1:${port}/moved`,
        fetch: grammyFetch,
      });
      await expect(api.getMe()).rejects.toBeInstanceOf(HttpError);
      expect(asked).toEqual(["/moved/bot1:token/getMe"]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
