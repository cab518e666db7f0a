import type { Message, Update } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { call, hang, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram-objects.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { pngImage } from "../helpers/images.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

const IMAGE_MODEL = "gemini-nano-banana-2.1";

const photosSent = (w: ServiceWorld) =>
  w.telegram.sentFiles.filter((f) => f.method === "sendPhoto" && f.chat_id === ALLOWED_USER);
const textsTo = (w: ServiceWorld) =>
  w.telegram.sent.filter((m) => m.chat_id === ALLOWED_USER).map((m) => m.plain_text);
const imageRequests = (w: ServiceWorld) => w.gemini.requests.filter((r) => r.model === IMAGE_MODEL);
const chatRequests = (w: ServiceWorld) => w.gemini.requests.filter((r) => r.model === "chat-model");
/** The function response the chat model got for generate_image, in its latest request. */
const imageResponse = (w: ServiceWorld) =>
  chatRequests(w)
    .at(-1)
    ?.body.contents.flatMap((c) => c.parts ?? [])
    .find((p) => p.functionResponse?.name === "generate_image")?.functionResponse?.response;

/** A photo from the allowed user in their private chat, with a caption. */
async function sendPhoto(w: ServiceWorld, bytes: Buffer, caption: string): Promise<void> {
  const id = w.nextUpdateId();
  const file = w.telegram.addFile(bytes);
  const base = buildTextUpdate({ updateId: id, messageId: id, text: "" });
  const { text: _text, ...message } = base.message as Message & { text: string };
  const update = {
    update_id: id,
    message: { ...message, photo: [{ ...file, width: 300, height: 200 }], caption },
  } as Update;
  expect((await w.post(update)).status).toBe(200);
}

describe.each(DATABASE_KINDS)("generate_image on %s", (kind) => {
  let w: ServiceWorld;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w?.close();
  });

  it("draws a picture, sends it with the answer, keeps it in context and in /usage", async () => {
    w = await startWorld({ kind });
    w.gemini.scriptFor(
      "chat-model",
      call("generate_image", { prompt: "a red fox in the snow, watercolour" }),
      text("Here is your fox."),
    );
    await w.say("draw me a fox");
    await eventually(() => textsTo(w).includes("Here is your fox."));
    const [photo] = photosSent(w);
    expect(photosSent(w)).toHaveLength(1);
    const request = imageRequests(w)[0];
    expect(request?.body.generationConfig).toMatchObject({ responseModalities: ["TEXT", "IMAGE"] });
    expect(request?.body.contents[0]?.parts?.at(-1)?.text).toBe(
      "a red fox in the snow, watercolour",
    );
    // The picture went out before the words, and is the one Gemini drew.
    const drawn = request && (await imageBytesOf(w, 0));
    expect(photo?.bytes.equals(drawn as Buffer)).toBe(true);
    const sentAt = w.telegram.calls.findIndex((c) => c.method === "sendPhoto");
    const wordsAt = w.telegram.calls.findIndex(
      (c) => c.method === "sendMessage" && c.body.text === "Here is your fox.",
    );
    expect(sentAt).toBeLessThan(wordsAt);
    // The model saw its picture beside the call's response.
    const answerRequest = chatRequests(w).at(-1);
    const toolTurn = answerRequest?.body.contents.at(-1)?.parts ?? [];
    expect(toolTurn.some((p) => p.functionResponse?.name === "generate_image")).toBe(true);
    expect(toolTurn.some((p) => p.inlineData?.mimeType === "image/png")).toBe(true);
    expect(imageResponse(w)).toMatchObject({
      output: { picture: expect.stringMatching(/^image-[0-9a-f]{12}\.png$/) },
    });
    await w.say("/history 1");
    const history = await eventually(() => textsTo(w).find((t) => t.startsWith("You: draw")));
    expect(history).toContain("✓ generate_image");
    expect(history).toMatch(/Koroku: 📷/);
    await w.say("/usage");
    const usage = await eventually(() => textsTo(w).find((t) => t.startsWith("Usage of")));
    expect(usage).not.toContain(IMAGE_MODEL);
    // A 1K picture is about 1,120 tokens at $30 a million: $0.0336.
    expect(usage).toMatch(/Today: .*≈ \$0\.0[34]/);
  });

  it("changes the photo the user sent, and a picture it drew before, by name", async () => {
    w = await startWorld({ kind });
    const photo = pngImage(300, 200, 900);
    w.gemini.scriptFor(
      "chat-model",
      call("generate_image", { prompt: "make the sky purple", edit: "last" }),
      text("Purple sky done."),
    );
    await sendPhoto(w, photo, "make the sky purple");
    await eventually(() => textsTo(w).includes("Purple sky done."));
    const edit = imageRequests(w)[0]?.body.contents[0]?.parts ?? [];
    expect(edit[0]?.inlineData?.data).toBe(photo.toString("base64"));
    const first = (imageResponse(w) as { output: { picture: string } }).output.picture;
    // A second edit names the picture drawn first.
    w.gemini.scriptFor(
      "chat-model",
      call("generate_image", { prompt: "add a moon", edit: first }),
      text("Moon added."),
    );
    await w.say("now add a moon to that one");
    await eventually(() => textsTo(w).includes("Moon added."));
    const drawnFirst = await imageBytesOf(w, 0);
    expect(imageRequests(w)[1]?.body.contents[0]?.parts?.[0]?.inlineData?.data).toBe(
      drawnFirst.toString("base64"),
    );
    expect(photosSent(w)).toHaveLength(2);
    expect(photosSent(w)[1]?.bytes.equals(drawnFirst)).toBe(false);
  });

  it("/stop ends the drawing, in a forum topic, and nothing is sent", async () => {
    w = await startWorld({ kind, telegram: { topicsInPrivateChats: true } });
    w.gemini.scriptFor("chat-model", call("generate_image", { prompt: "a slow cathedral" }));
    w.gemini.scriptFor(IMAGE_MODEL, hang());
    await w.say("draw a cathedral", { threadId: 5 });
    // The live answer says what is going on while the picture is drawn.
    await eventually(() => w.telegram.drafts.some((d) => d.plain_text.includes("🎨 drawing…")));
    await w.say("/stop", { threadId: 5 });
    const stopped = await eventually(() =>
      w.telegram.sent.find((m) => m.plain_text === "(stopped)"),
    );
    expect(stopped.body.message_thread_id).toBe(5);
    expect(photosSent(w)).toEqual([]);
    expect(imageRequests(w)).toHaveLength(1);
  });

  it("tells a refusal in plain words and sends no picture", async () => {
    w = await startWorld({ kind });
    w.gemini.scriptFor(
      "chat-model",
      call("generate_image", { prompt: "something forbidden" }),
      text("I can't draw that one: it was refused for safety."),
    );
    await w.say("draw something forbidden");
    await eventually(() => textsTo(w).some((t) => t.startsWith("I can't draw")));
    expect(imageResponse(w)).toEqual({
      error: expect.stringMatching(
        /^Gemini refused to draw this for safety reasons \(IMAGE_SAFETY\)/,
      ),
    });
    expect(photosSent(w)).toEqual([]);
  });
});

/** The PNG the fake image model drew for its `index`th request (it draws the same again). */
async function imageBytesOf(w: ServiceWorld, index: number): Promise<Buffer> {
  const { imageStep } = await import("../fakes/gemini-media-models.js");
  const request = imageRequests(w)[index];
  if (!request) throw new Error(`no image request ${index}`);
  const data = imageStep(request).parts.find((p) => p.inlineData)?.inlineData?.data ?? "";
  return Buffer.from(data, "base64");
}
