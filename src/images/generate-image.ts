import { z } from "zod";
import type { AgentHooks } from "../agent/hooks.js";
import type { ModelClient } from "../agent/model-client.js";
import type { ReadAttachments } from "../agent/request-media.js";
import { sniff } from "../media/sniff.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import type { MediaPart } from "../session/events.js";
import type { SessionStore } from "../session/store.js";
import { defineTool, WithFiles } from "../tools/registry.js";
import { pictureNamed, picturesOf } from "./pictures.js";

const schema = z.object({
  prompt: z
    .string()
    .min(1)
    .max(4_000)
    .describe("What to draw, or for an edit what to change, in detail (subject, style, colours)"),
  edit: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Leave out to draw a new picture. To change a picture of this conversation: "last" for the latest one, or its name (image-1a2b3c4d5e6f.png, as tool results and /history name them)',
    ),
});

/** Finish and block reasons Gemini gives a picture it will not make for safety. */
const SAFETY = /SAFETY|PROHIBITED|BLOCKLIST|SPII|IMAGE_OTHER|RECITATION/;

/**
 * generate_image: draws a picture, or changes one of the conversation's (a photo the user sent,
 * one drawn before), with GEMINI_IMAGE_MODEL. The picture is stored as an attachment (once per
 * SHA-256), kept in the conversation's context beside the call, where the model sees it, and
 * sent with the answer. A refusal for safety is an error the model tells the user in its words.
 * Each call is counted for /usage at the image model's price.
 */
export function createGenerateImageTool(deps: {
  model: ModelClient;
  hooks: AgentHooks;
  store: Pick<SessionStore, "loadContext">;
  read: ReadAttachments;
  saveFile(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
  settings: { model: string };
}) {
  return defineTool({
    name: "generate_image",
    description:
      "Draws a picture from a description, or changes a picture of this conversation (edit), and sends it to the chat with your answer. Only when the user asks for a picture: each one costs money.",
    schema,
    // Pictures arrive in the order the model asked for them.
    maxConcurrent: 1,
    async run(args, ctx) {
      let source: { part: MediaPart; bytes: Buffer } | undefined;
      if (args.edit !== undefined) {
        const pictures = picturesOf(await deps.store.loadContext(ctx.chatId));
        const part = pictureNamed(pictures, args.edit);
        const bytes = (await deps.read([part.sha256])).get(part.sha256);
        if (!bytes || bytes.byteLength === 0) {
          throw new Error(
            `the picture ${args.edit} is no longer stored; ask the user to send it again`,
          );
        }
        source = { part, bytes };
      }
      const result = await deps.model.generate({
        model: deps.settings.model,
        contents: [
          {
            role: "user",
            parts: [
              ...(source
                ? [
                    {
                      inlineData: {
                        mimeType: source.part.mimeType,
                        data: source.bytes.toString("base64"),
                      },
                    },
                  ]
                : []),
              { text: args.prompt },
            ],
          },
        ],
        output: { kind: "image" },
        ...(ctx.signal ? { stop: ctx.signal } : {}),
      });
      deps.hooks.emit("modelCall", {
        chatId: ctx.chatId,
        model: deps.settings.model,
        usage: result.usage,
      });
      if (result.stopped) throw new Error("not drawn: the user stopped the answer");
      const parts = result.content.parts ?? [];
      const image = parts.find(
        (p) => p.inlineData?.data && p.inlineData.mimeType?.startsWith("image/"),
      );
      const words = parts
        .filter((p) => p.text && !p.thought)
        .map((p) => p.text)
        .join(" ")
        .trim();
      if (!image?.inlineData) {
        const reason = result.blockReason ?? result.finishReason ?? "";
        if (SAFETY.test(reason)) {
          throw new Error(
            `Gemini refused to draw this for safety reasons (${reason}). Tell the user so in plain words, and do not try the same request again.`,
          );
        }
        throw new Error(
          `Gemini drew nothing${words ? `; it said: ${words}` : ""} (${reason || "no reason given"})`,
        );
      }
      const bytes = Buffer.from(image.inlineData.data ?? "", "base64");
      const claimed = image.inlineData.mimeType ?? "image/png";
      const sniffed = sniff(bytes, claimed);
      if (!sniffed.ok) throw new Error(`Gemini's picture is damaged (${sniffed.problem})`);
      const stored = await deps.saveFile(ctx.chatId, { bytes, mimeType: sniffed.mimeType });
      const extension = sniffed.mimeType.split("/")[1]?.replace("jpeg", "jpg") ?? "png";
      const name = `image-${stored.sha256.slice(0, 12)}.${extension}`;
      const part: MediaPart = { kind: "media", media: "photo", ...stored, name };
      const output = {
        picture: name,
        ...(source?.part.name ? { changed: source.part.name } : {}),
        sent: "with your answer",
        ...(words ? { note: words } : {}),
      };
      return new WithFiles(output, [part], true);
    },
  });
}
