import type { Kysely } from "kysely";
import { addUsage, billedInputTokens, NO_USAGE, type Usage } from "../agent/model-client.js";
import { precompiled } from "../db/precompiled.js";
import type { Database, ModelUsageTable } from "../db/schema.js";

export type UsageByModel = { model: string; usage: Usage }[];

export type UsageStore = ReturnType<typeof createUsageStore>;

/** The tokens of every Gemini call, kept per conversation (the model_usage table). */
export function createUsageStore(db: Kysely<Database>) {
  // Every model call stores a row: compiled once (src/db/precompiled.ts).
  const insertUsage = precompiled(db, (a: ModelUsageTable) =>
    db.insertInto("model_usage").values({
      chat_id: a.chat_id,
      model: a.model,
      prompt_tokens: a.prompt_tokens,
      cached_tokens: a.cached_tokens,
      output_tokens: a.output_tokens,
      thoughts_tokens: a.thoughts_tokens,
      created_at: a.created_at,
    }),
  );
  return {
    async record(chatId: string, model: string, usage: Usage, at: Date): Promise<void> {
      await insertUsage.run({
        chat_id: chatId,
        model,
        prompt_tokens: billedInputTokens(usage),
        cached_tokens: usage.cachedTokens,
        output_tokens: usage.outputTokens,
        thoughts_tokens: usage.thoughtsTokens,
        created_at: at.toISOString(),
      });
    },

    /** Gives one conversation's tokens to another (a group that became a supergroup). */
    async move(from: string, to: string): Promise<number> {
      const moved = await db
        .updateTable("model_usage")
        .set({ chat_id: to })
        .where("chat_id", "=", from)
        .executeTakeFirst();
      return Number(moved.numUpdatedRows);
    },

    /** A conversation's tokens since `since`, per model. */
    async since(chatId: string, since: Date): Promise<UsageByModel> {
      const rows = await db
        .selectFrom("model_usage")
        .select((eb) => [
          "model",
          eb.fn.sum<number>("prompt_tokens").as("prompt"),
          eb.fn.sum<number>("cached_tokens").as("cached"),
          eb.fn.sum<number>("output_tokens").as("output"),
          eb.fn.sum<number>("thoughts_tokens").as("thoughts"),
        ])
        .where("chat_id", "=", chatId)
        .where("created_at", ">=", since.toISOString())
        .groupBy("model")
        .orderBy("model")
        .execute();
      return rows.map((r) => ({
        model: r.model,
        usage: {
          promptTokens: Number(r.prompt),
          cachedTokens: Number(r.cached),
          outputTokens: Number(r.output),
          thoughtsTokens: Number(r.thoughts),
          // Stored with the prompt's, as billed.
          toolUseTokens: 0,
        },
      }));
    },
  };
}

export function totalOf(byModel: UsageByModel): Usage {
  const total = { ...NO_USAGE };
  for (const { usage } of byModel) addUsage(total, usage);
  return total;
}
