import path from "node:path";
import { z } from "zod";
import { sniff } from "../media/sniff.js";
import { TELEGRAM_CAPTION_MAX_CHARS, TELEGRAM_UPLOAD_MAX_BYTES } from "../media/upload-limits.js";
import type { Workspaces } from "../scope/workspaces.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import type { MediaPart } from "../session/events.js";
import { byteSize } from "../session/media-text.js";
import { readCapped } from "./read-capped.js";
import { defineTool, type SentAs, WithFiles } from "./registry.js";
import { describeFsError, resolveInWorkspace } from "./workspace-path.js";

const schema = z.object({
  path: z.string().min(1).describe("File path relative to the workspace, e.g. charts/sales.png"),
  caption: z
    .string()
    .max(TELEGRAM_CAPTION_MAX_CHARS)
    .optional()
    .describe("Plain text shown under the file"),
});

// What Telegram is told a file is when its bytes do not say (images and PDFs do).
const TEXT_EXTENSIONS = new Set(["txt", "md", "csv", "json", "log", "html", "xml", "yaml", "yml"]);

function mimeTypeOf(bytes: Buffer, name: string): string {
  const sniffed = sniff(bytes, "application/octet-stream");
  if (sniffed.ok && sniffed.mimeType !== "application/octet-stream") return sniffed.mimeType;
  const ext = path.extname(name).slice(1).toLowerCase();
  return TEXT_EXTENSIONS.has(ext) ? "text/plain" : "application/octet-stream";
}

/**
 * send_file: sends a workspace file to the conversation, as a photo when Telegram shows it as one,
 * else as a document. The file is also stored as an attachment of the conversation, so it stays
 * in its history (/history shows it) after the workspace copy is gone.
 */
export function createSendFileTool(deps: {
  workspaces: Workspaces;
  saveFile(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
}) {
  const limit = byteSize(TELEGRAM_UPLOAD_MAX_BYTES);
  return defineTool({
    name: "send_file",
    description: `Sends a file from the workspace to this chat: images as photos, anything else as a document (at most ${limit}).`,
    schema,
    // Files arrive in the order the model asked for them.
    maxConcurrent: 1,
    async run(args, ctx) {
      if (!ctx.sendFile) {
        throw new Error(
          "this conversation has no chat to send files to; send_file works in Telegram",
        );
      }
      const file = await resolveInWorkspace(await deps.workspaces.dirOf(ctx.scope), args.path);
      let bytes: Buffer;
      try {
        bytes = await readCapped(file, args.path, TELEGRAM_UPLOAD_MAX_BYTES, (size) => {
          // Just over the limit rounds to the limit: then the bytes tell them apart.
          const shown = byteSize(size) === limit ? `${size} bytes` : byteSize(size);
          return `"${args.path}" is ${shown}; Telegram takes files of up to ${limit} from a bot`;
        });
      } catch (error) {
        throw describeFsError(error, args.path);
      }
      if (bytes.byteLength === 0) {
        throw new Error(`"${args.path}" is empty; Telegram does not send empty files`);
      }
      const name = path.basename(file);
      const mimeType = mimeTypeOf(bytes, name);
      // Stored before it is sent: a file in the chat is always one the history holds.
      const stored = await deps.saveFile(ctx.chatId, { bytes, mimeType, fileName: name });
      const outcome = (sentAs: SentAs) => {
        const part: MediaPart = { kind: "media", media: sentAs, ...stored, name };
        return new WithFiles({ sent: sentAs, path: args.path, size: bytes.byteLength }, [part]);
      };
      const toSend = { bytes, name, mimeType, ...(args.caption ? { caption: args.caption } : {}) };
      return outcome(await ctx.sendFile(toSend, outcome));
    },
  });
}
