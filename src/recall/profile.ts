import type { Kysely } from "kysely";
import { precompiled } from "../db/precompiled.js";
import type { Database } from "../db/schema.js";
import { wordsOf } from "./keyword-search.js";

/**
 * The profile's size budget: it rides in every request's system instruction, so it must stay
 * small (about 1,000 tokens at most), and short facts are what the model reads best.
 */
export const PROFILE_BUDGET = { entries: 40, factChars: 300, totalChars: 4_000 } as const;

export type ProfileEntry = { id: number; fact: string; createdAt: string };

export type Remembered =
  | { status: "added"; entry: ProfileEntry }
  | { status: "known"; entry: ProfileEntry }
  | { status: "full"; entries: number; chars: number };

/** One line, spaces squeezed: a fact is shown as a list item and a button's label. */
export const normalizeFact = (fact: string): string => fact.replace(/\s+/g, " ").trim();

/**
 * Whether every word of `words` is a word of `fact`, in any case, and Latin letters with or
 * without accents: what forget matches. SQLite's word index reads "Zoë" as "zoe", so "/forget zoe"
 * hides the messages that say "Zoë" and must take the facts and summaries that say it too; on
 * PostgreSQL, whose index keeps accents, a fact goes that a message search would not find, the
 * side a forget may err on. Marks of other scripts are letters of their own (バ is not ハ).
 */
export function factMatches(fact: string, words: string): boolean {
  const fold = (text: string) =>
    wordsOf(text.normalize("NFD").replace(/(\p{Script=Latin})\p{M}+/gu, "$1"));
  const wanted = fold(words);
  if (wanted.length === 0) return false;
  const have = new Set(fold(fact));
  return wanted.every((w) => have.has(w));
}

const toEntry = (row: { id: number; fact: string; created_at: string }): ProfileEntry => ({
  id: row.id,
  fact: row.fact,
  createdAt: row.created_at,
});

const totalChars = (entries: readonly { fact: string }[]) =>
  entries.reduce((sum, e) => sum + e.fact.length, 0);

export type Profiles = ReturnType<typeof createProfiles>;

/** Rolls a consolidation's replacement back: the profile changed since it was read. */
class ProfileChangedError extends Error {}

/** The profile of each recall scope (by its scopeName()), in table `profile_entries`. */
export function createProfiles(deps: { db: Kysely<Database>; now?: () => Date }) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  // Every turn's system instruction reads the profile: compiled once (src/db/precompiled.ts).
  const entriesOf = precompiled(db, (a: { scope: string }) =>
    db
      .selectFrom("profile_entries")
      .select(["id", "fact", "created_at"])
      .where("scope", "=", a.scope)
      .orderBy("id"),
  );
  const list = async (scope: string, trx: Kysely<Database> = db): Promise<ProfileEntry[]> =>
    (await entriesOf.run({ scope }, trx)).rows.map(toEntry);

  /** Deletes the scope's entries of these ids; returns how many went. */
  async function deleteEntries(
    trx: Kysely<Database>,
    scope: string,
    ids: readonly number[],
  ): Promise<number> {
    if (ids.length === 0) return 0;
    const deleted = await trx
      .deleteFrom("profile_entries")
      .where("scope", "=", scope)
      .where("id", "in", ids)
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }

  async function removeWhere(
    scope: string,
    match: (entry: ProfileEntry) => boolean,
  ): Promise<ProfileEntry[]> {
    return db.transaction().execute(async (trx) => {
      const gone = (await list(scope, trx)).filter(match);
      await deleteEntries(
        trx,
        scope,
        gone.map((e) => e.id),
      );
      return gone;
    });
  }

  return {
    list: (scope: string) => list(scope),

    /**
     * Keeps a fact, once: the same fact again (any case and spacing) is "known". Refused as
     * "full" past the budget, so the model must forget or merge something first.
     */
    async remember(scope: string, fact: string): Promise<Remembered> {
      const text = normalizeFact(fact);
      return db.transaction().execute(async (trx) => {
        const entries = await list(scope, trx);
        const same = entries.find((e) => e.fact.toLowerCase() === text.toLowerCase());
        if (same) return { status: "known", entry: same };
        if (
          entries.length >= PROFILE_BUDGET.entries ||
          totalChars(entries) + text.length > PROFILE_BUDGET.totalChars
        ) {
          return { status: "full", entries: entries.length, chars: totalChars(entries) };
        }
        const createdAt = now().toISOString();
        const { id } = await trx
          .insertInto("profile_entries")
          .values({ scope, fact: text, created_at: createdAt })
          .returning("id")
          .executeTakeFirstOrThrow();
        return { status: "added", entry: { id, fact: text, createdAt } };
      });
    },

    /** Removes the entries that have every word of `words`; returns them. */
    forget: (scope: string, words: string) =>
      removeWhere(scope, (entry) => factMatches(entry.fact, words)),

    /** Removes one entry by its id (a /memory button); undefined when it is gone already. */
    async remove(scope: string, id: number): Promise<ProfileEntry | undefined> {
      const [gone] = await removeWhere(scope, (entry) => entry.id === id);
      return gone;
    },

    /** Gives one scope's entries to another (a group that became a supergroup); returns how many. */
    async moveScope(from: string, to: string): Promise<number> {
      const moved = await db
        .updateTable("profile_entries")
        .set({ scope: to })
        .where("scope", "=", from)
        .executeTakeFirst();
      return Number(moved.numUpdatedRows);
    },

    /**
     * Puts `facts` in place of the profile as it was read (`read`, a consolidation's), cut to the
     * budget. The old entries stay when nothing usable is given, and undefined says that nothing
     * was replaced because the profile changed since it was read (a fact forgotten or remembered
     * while the summary model wrote): its list would bring the one back, or drop the other.
     */
    async replace(
      scope: string,
      facts: readonly string[],
      read: readonly ProfileEntry[],
    ): Promise<ProfileEntry[] | undefined> {
      const kept: string[] = [];
      let chars = 0;
      for (const fact of facts.map(normalizeFact)) {
        if (fact === "" || fact.length > PROFILE_BUDGET.factChars) continue;
        if (kept.some((k) => k.toLowerCase() === fact.toLowerCase())) continue;
        if (
          kept.length >= PROFILE_BUDGET.entries ||
          chars + fact.length > PROFILE_BUDGET.totalChars
        )
          break;
        kept.push(fact);
        chars += fact.length;
      }
      if (kept.length === 0) return list(scope);
      const createdAt = now().toISOString();
      try {
        return await db.transaction().execute(async (trx) => {
          // Exactly the entries read, and nothing added since: a forget or a remember that came
          // in between, committed before or while this runs, leaves a count that differs.
          const deleted = await deleteEntries(
            trx,
            scope,
            read.map((e) => e.id),
          );
          const left = await list(scope, trx);
          if (deleted !== read.length || left.length > 0) {
            throw new ProfileChangedError();
          }
          await trx
            .insertInto("profile_entries")
            .values(kept.map((fact) => ({ scope, fact, created_at: createdAt })))
            .execute();
          return list(scope, trx);
        });
      } catch (error) {
        if (error instanceof ProfileChangedError) return undefined;
        throw error;
      }
    },
  };
}

/**
 * The profile as the system instruction carries it: the same entries give the same text, so the
 * request's prefix (and Gemini's cache of it) changes only when the profile does.
 */
export function profileInstruction(entries: readonly { fact: string }[]): string {
  if (entries.length === 0) return "";
  return [
    "",
    "What you know about the user of this chat (your profile of them, kept with remember and forget; they see it with /memory):",
    ...entries.map((e) => `- ${e.fact}`),
  ].join("\n");
}
