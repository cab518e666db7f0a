import { parseSentToolFiles, type SentToolFile } from "../agent/tool-files.js";
import type { TurnInput } from "../agent/turn.js";
import type { Logger } from "../logger.js";
import { type Lease, LeaseLostError } from "../queue/inbox.js";
import type { Delivery } from "./delivery.js";

/**
 * send_file for one turn: to the turn's chat and topic, by the holder of the update only. Each
 * file is recorded with its call the moment Telegram takes it (by the courier, off the
 * busy event loop), and a run after a crash answers the call with what it did instead of letting
 * the model send the file again: the tool's own result is stored only after the whole batch of
 * calls, long after the file went out.
 */
export function toolFileSender(args: {
  delivery: Delivery;
  logger: Logger;
  chatId: number;
  threadId: number | undefined;
  lease: Pick<Lease, "ensureHeld" | "toolFiles" | "recordToolFiles" | "toolFilesStatement">;
}): Pick<TurnInput, "sendFile" | "sentToolFiles"> {
  const { delivery, chatId, threadId, lease } = args;
  const before = parseSentToolFiles(lease.toolFiles);
  let recorded: readonly SentToolFile[] = before;
  return {
    sentToolFiles: before,
    async sendFile(file, sent) {
      await lease.ensureHeld();
      const withThis = (sentAs: Parameters<typeof sent>[0]) => [...recorded, sent(sentAs)];
      const { value, rows } = await delivery.sendFile(chatId, file, threadId, (sentAs) =>
        lease.toolFilesStatement(withThis(sentAs)),
      );
      const files = withThis(value);
      recorded = files;
      try {
        await lease.recordToolFiles(files, rows);
      } catch (error) {
        if (error instanceof LeaseLostError) throw error;
        // Telegram has the file: failing the call now would have the model send it again.
        args.logger.warn(
          { err: error, chat_id: chatId },
          "could not record a file send_file sent; a restart before the turn's end would send it again",
        );
      }
      return value;
    },
  };
}
