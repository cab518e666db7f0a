import type { Kysely } from "kysely";
import { VOICE_REPLY_MODES, type VoiceReplyMode } from "../config.js";
import { precompiled } from "../db/precompiled.js";
import type { Database } from "../db/schema.js";

export type VoiceSettings = {
  /** The conversation's `/voice` setting, or VOICE_REPLIES when it has none. */
  modeOf(chatId: string): Promise<VoiceReplyMode>;
  set(chatId: string, mode: VoiceReplyMode): Promise<void>;
  /** A group that became a supergroup keeps its `/voice`, unless the new chat has one already. */
  move(from: string, to: string): Promise<number>;
};

const isMode = (value: string): value is VoiceReplyMode =>
  (VOICE_REPLY_MODES as readonly string[]).includes(value);

/** Each conversation's `/voice`, stored (shared by replicas), VOICE_REPLIES where none was set. */
export function createVoiceSettings(deps: {
  db: Kysely<Database>;
  fallback: VoiceReplyMode;
  now?: () => Date;
}): VoiceSettings {
  const now = deps.now ?? (() => new Date());
  // Every answer asks: compiled once (src/db/precompiled.ts).
  const modeRow = precompiled(deps.db, (a: { chatId: string }) =>
    deps.db.selectFrom("conversation_voice").select("mode").where("chat_id", "=", a.chatId),
  );
  return {
    async modeOf(chatId) {
      const [row] = (await modeRow.run({ chatId })).rows;
      return row && isMode(row.mode) ? row.mode : deps.fallback;
    },
    async set(chatId, mode) {
      const updated_at = now().toISOString();
      await deps.db
        .insertInto("conversation_voice")
        .values({ chat_id: chatId, mode, updated_at })
        .onConflict((oc) => oc.column("chat_id").doUpdateSet({ mode, updated_at }))
        .execute();
    },
    async move(from, to) {
      return deps.db.transaction().execute(async (trx) => {
        const held = trx
          .selectFrom("conversation_voice")
          .select("chat_id")
          .where("chat_id", "=", to);
        const moved = await trx
          .updateTable("conversation_voice")
          .set({ chat_id: to })
          .where("chat_id", "=", from)
          .where(({ not, exists }) => not(exists(held)))
          .executeTakeFirst();
        await trx.deleteFrom("conversation_voice").where("chat_id", "=", from).execute();
        return Number(moved.numUpdatedRows);
      });
    },
  };
}

/** Whether an answer is spoken: always, never, or (auto) when the user spoke to Koroku. */
export const speaksTo = (mode: VoiceReplyMode, userSpoke: boolean): boolean =>
  mode === "always" || (mode === "auto" && userSpoke);
