import { randomBytes } from "node:crypto";
import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFileDownloader } from "../../../src/telegram/inbound/files.js";
import { type FakeTelegram, startFakeTelegram } from "../../fakes/telegram.js";

/** Downloading what users send, from the fake Telegram through grammY's getFile. */

let telegram: FakeTelegram;
beforeAll(async () => {
  telegram = await startFakeTelegram();
});
afterAll(() => telegram.close());

const downloader = () =>
  createFileDownloader({
    api: new Api(telegram.token, { apiRoot: telegram.apiRoot }),
    apiRoot: telegram.apiRoot,
    maxBytes: 20 * 1024 * 1024,
    stallMs: 1_000,
  });

describe("a file download", () => {
  it("that stalls is given up once nothing came for a while, and the next try gets the file", async () => {
    const bytes = randomBytes(256 * 1024);
    const { file_id } = telegram.addFile(bytes);
    const download = downloader();
    // Headers and a first part, then silence; then the headers alone.
    telegram.stallNextDownload(64 * 1024);
    const failure = await download(file_id).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe(
      "downloading a file from Telegram stalled: nothing came for 1000 ms",
    );
    expect(String((failure as Error).stack)).not.toContain(telegram.token);
    telegram.stallNextDownload(0);
    await expect(download(file_id)).rejects.toThrow(/stalled/);
    expect(Buffer.compare(await download(file_id), bytes)).toBe(0);
  });
});
