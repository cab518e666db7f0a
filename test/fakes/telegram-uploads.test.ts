import { Api, GrammyError, InputFile } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pngImage } from "../helpers/images.js";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";
import { PHOTO_MAX_BYTES } from "./telegram-uploads.js";

const CHAT = 4242;

describe("fake Telegram: photos and documents uploaded through grammY", () => {
  let fake: FakeTelegram;
  let api: Api;
  beforeEach(async () => {
    fake = await startFakeTelegram();
    api = new Api(fake.token, { apiRoot: fake.apiRoot });
  });
  afterEach(() => fake.close());

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    if (!(error instanceof GrammyError)) throw new Error(`expected a GrammyError, got ${error}`);
    return { code: error.error_code, description: error.description };
  };

  it("takes a photo with an HTML caption, byte for byte, and tells its size", async () => {
    const bytes = pngImage(800, 600, 5_000);
    const message = await api.sendPhoto(CHAT, new InputFile(bytes, "chart.png"), {
      caption: "<b>Sales</b> by month",
      parse_mode: "HTML",
    });
    expect(message.photo?.[0]).toMatchObject({ width: 800, height: 600, file_size: 5_000 });
    expect(message.caption).toBe("Sales by month");
    expect(message.caption_entities).toEqual([{ type: "bold", offset: 0, length: 5 }]);
    expect(fake.sentFiles).toHaveLength(1);
    expect(fake.sentFiles[0]).toMatchObject({ method: "sendPhoto", chat_id: CHAT });
    expect(fake.sentFiles[0]?.bytes.equals(bytes)).toBe(true);
    // Recorded calls show the upload's name and size, not its bytes.
    expect(JSON.stringify(fake.calls.at(-1)?.body)).toContain('"size":5000');
  });

  it("takes a document of any type under a name with spaces", async () => {
    const bytes = Buffer.from("%PDF-1.4\n%%EOF\n");
    const message = await api.sendDocument(CHAT, new InputFile(bytes, "Q3 report.pdf"));
    expect(message.document?.file_name).toBe("Q3 report.pdf");
    expect(fake.sentFiles[0]?.bytes.equals(bytes)).toBe(true);
    // A file Telegram holds is sent again by its file_id, without an upload.
    const again = await api.sendDocument(CHAT, message.document?.file_id ?? "");
    expect(again.document?.file_size).toBe(bytes.byteLength);
  });

  it("refuses what Telegram refuses of a photo: too big, too long and thin, not an image", async () => {
    const big = pngImage(1000, 1000, PHOTO_MAX_BYTES + 1);
    expect(await refusal(api.sendPhoto(CHAT, new InputFile(big, "big.png")))).toEqual({
      code: 400,
      description: "Bad Request: PHOTO_SAVE_FILE_INVALID",
    });
    const thin = pngImage(2100, 100);
    expect((await refusal(api.sendPhoto(CHAT, new InputFile(thin)))).description).toBe(
      "Bad Request: PHOTO_INVALID_DIMENSIONS",
    );
    const huge = pngImage(6000, 5000);
    expect((await refusal(api.sendPhoto(CHAT, new InputFile(huge)))).description).toBe(
      "Bad Request: PHOTO_INVALID_DIMENSIONS",
    );
    const text = Buffer.from("not an image");
    expect((await refusal(api.sendPhoto(CHAT, new InputFile(text)))).description).toBe(
      "Bad Request: IMAGE_PROCESS_FAILED",
    );
    const caption = "x".repeat(1025);
    expect(
      (await refusal(api.sendPhoto(CHAT, new InputFile(pngImage(10, 10)), { caption })))
        .description,
    ).toBe("Bad Request: message caption is too long");
    expect(fake.sentFiles).toEqual([]);
  });

  it("refuses an upload over 50 MB as too large", async () => {
    const tooBig = Buffer.alloc(50 * 1024 * 1024 + 1);
    expect(await refusal(api.sendDocument(CHAT, new InputFile(tooBig, "x.bin")))).toEqual({
      code: 413,
      description: "Request Entity Too Large",
    });
  });
});
