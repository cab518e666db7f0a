import { z } from "zod";
import { jsonObject, mediaPartSchema } from "../session/events.js";

/**
 * A file a tool call sent to the chat (send_file), as recorded the moment Telegram took it: the
 * call, by its stored model event and its place in it, and what the call answered. A run after a
 * crash that cut the call off answers it with this, so the model knows the file went out.
 */
export const sentToolFileSchema = z.object({
  /** The id of the stored model event that made the call. */
  event: z.number().int(),
  /** The call's index among the event's function calls. */
  call: z.number().int().nonnegative(),
  response: jsonObject,
  files: z.array(mediaPartSchema),
});

export type SentToolFile = z.infer<typeof sentToolFileSchema>;

/** The records a lease kept; one that does not parse (a hand-edited row) is left out. */
export function parseSentToolFiles(stored: readonly unknown[]): SentToolFile[] {
  return stored.flatMap((item) => {
    const parsed = sentToolFileSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}
