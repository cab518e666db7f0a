import type { Update } from "grammy/types";
import { z } from "zod";

const userSchema = z.looseObject({ id: z.number().int(), is_bot: z.boolean() });
const chatSchema = z.looseObject({ id: z.number().int(), type: z.string() });
const entitySchema = z.looseObject({
  type: z.string(),
  offset: z.number().int(),
  length: z.number().int(),
});

/** The parts of a message Koroku reads; anything else passes through untouched. */
const messageSchema = z.looseObject({
  message_id: z.number().int(),
  chat: chatSchema,
  from: userSchema.optional(),
  sender_chat: chatSchema.optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  entities: z.array(entitySchema).optional(),
  caption_entities: z.array(entitySchema).optional(),
  message_thread_id: z.number().int().optional(),
  reply_to_message: z
    .looseObject({ message_id: z.number().int(), from: userSchema.optional() })
    .optional(),
  quote: z.looseObject({ text: z.string() }).optional(),
  forward_origin: z.looseObject({ type: z.string(), date: z.number() }).optional(),
  migrate_to_chat_id: z.number().int().optional(),
  migrate_from_chat_id: z.number().int().optional(),
});

const updateIdSchema = z.looseObject({ update_id: z.number().int().nonnegative() });
const updateSchema = updateIdSchema.extend({ message: messageSchema.optional() });

export type UpdateCheck =
  | { kind: "update"; update: Update }
  /** An update by its id, in a shape Telegram never sends: skipped, naming what is odd. */
  | { kind: "odd"; updateId: number; field: string; problem: string }
  /** Not an update at all. */
  | { kind: "invalid" };

/** The path of the first null in a JSON value: Telegram leaves a field out instead. */
function firstNull(value: unknown, path: string): string | undefined {
  if (value === null) return path;
  if (typeof value !== "object") return undefined;
  for (const [key, child] of Object.entries(value)) {
    const found = firstNull(child, path === "" ? key : `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Whether a webhook body is an update Koroku can read. A body with a numeric update_id is an
 * update even when the rest is odd (an old shape without is_bot, a null field): Telegram would
 * only deliver it again after a 400, so it is skipped instead, and the log says which field.
 */
export function checkUpdate(json: unknown): UpdateCheck {
  const id = updateIdSchema.safeParse(json);
  if (!id.success) return { kind: "invalid" };
  const updateId = id.data.update_id;
  const nullAt = firstNull(json, "");
  if (nullAt !== undefined) return { kind: "odd", updateId, field: nullAt, problem: "is null" };
  const parsed = updateSchema.safeParse(json);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    return {
      kind: "odd",
      updateId,
      field: issue?.path.join(".") ?? "",
      problem: issue?.message ?? "unexpected shape",
    };
  }
  return { kind: "update", update: parsed.data as unknown as Update };
}
