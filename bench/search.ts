import { sql } from "kysely";
import type { DatabaseKind } from "../src/db/connect.js";
import { openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createLogger } from "../src/logger.js";
import { scopeArea } from "../src/recall/area.js";
import { createKeywordSearch } from "../src/recall/keyword-search.js";
import type { SessionEvent } from "../src/session/events.js";
import { createSessionStore, type SessionStore } from "../src/session/store.js";
import { createBenchDatabase, type DatabaseBenchOptions, onEachDatabase } from "./databases.js";
import type { BenchRow } from "./run.js";
import { round, summarize } from "./stats.js";

const BENCHMARK = "search";
const EVENTS = 100_000;
const BATCH = 500;
const VOCABULARY = 5_000;
const ROUNDS = 40;
const TARGET_MS = 5;
const CONVERSATION = "-1009000000001:42";
/** Planted: the exact phrase in a few events, its words scattered in many more. */
const PHRASE = ["blue", "heron", "lake"];
const PHRASE_EVERY = 5_000;
const SCATTERED_EVERY = 500;

/** A seeded generator, so every run searches the same history. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const SYLLABLES = [
  "ka",
  "ri",
  "to",
  "mo",
  "ne",
  "sa",
  "lu",
  "pe",
  "zo",
  "vi",
  "da",
  "gu",
  "shi",
  "en",
  "or",
];
/** Made-up words, so that no planted word occurs by chance; rank 0 is the most frequent. */
const vocabulary = Array.from({ length: VOCABULARY }, (_, rank) => {
  let word = "";
  for (let n = rank + SYLLABLES.length; n > 0; n = Math.floor(n / SYLLABLES.length)) {
    word += SYLLABLES[n % SYLLABLES.length];
  }
  return word;
});
// Word frequencies follow Zipf's law, as in real text.
const cumulative: number[] = [];
let total = 0;
for (let rank = 0; rank < VOCABULARY; rank++) {
  total += 1 / (rank + 1);
  cumulative.push(total);
}

function word(next: () => number): string {
  const target = next() * (cumulative.at(-1) as number);
  let low = 0;
  let high = VOCABULARY - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((cumulative[mid] as number) < target) low = mid + 1;
    else high = mid;
  }
  return vocabulary[low] as string;
}

function eventText(index: number, next: () => number): string {
  const words = Array.from({ length: 8 + Math.floor(next() * 32) }, () => word(next));
  if (index % PHRASE_EVERY === 0) words.splice(3, 0, ...PHRASE);
  else if (index % SCATTERED_EVERY === 0) {
    words.splice(1, 0, PHRASE[0] as string);
    words.splice(5, 0, PHRASE[2] as string);
    words.push(PHRASE[1] as string);
  }
  return words.join(" ");
}

const event = (index: number, text: string): SessionEvent => ({
  v: 1,
  event_type: "session",
  role: index % 2 === 0 ? "user" : "model",
  parts: [{ kind: "text", text }],
});

async function prefill(store: SessionStore): Promise<void> {
  const next = random(7);
  for (let start = 0; start < EVENTS; start += BATCH) {
    const batch = Array.from({ length: BATCH }, (_, i) => ({
      event: event(start + i, eventText(start + i, next)),
    }));
    await store.append(CONVERSATION, batch);
  }
}

/** What is searched: the planted phrase, a rare, a middling and a common word, a prefix, dates. */
function queries(): { name: string; query: string; since?: string }[] {
  return [
    { name: "two words (phrase ranked first)", query: "blue heron" },
    { name: "quoted phrase", query: '"blue heron lake"' },
    { name: "rare word", query: vocabulary[4_000] as string },
    { name: "middling word", query: vocabulary[300] as string },
    { name: "common word", query: vocabulary[20] as string },
    { name: "prefix", query: `${(vocabulary[1_200] as string).slice(0, 4)}*` },
    { name: "two words, since a date", query: "blue lake", since: "2000-01-01T00:00:00.000Z" },
  ];
}

async function benchDatabase(
  database: DatabaseKind,
  options: DatabaseBenchOptions,
): Promise<BenchRow[]> {
  const logger = createLogger({ level: "silent", secrets: [] });
  const bench = await createBenchDatabase(database, options.postgresUrl);
  const db = openDatabase(bench.target);
  try {
    await migrateToLatest(db.db, logger);
    const store = createSessionStore({ db: db.db, logger });
    const keyword = createKeywordSearch({ db: db.db });
    const area = scopeArea(CONVERSATION);
    options.progress?.(`search: ${database}, storing ${EVENTS.toLocaleString("en-US")} events`);
    const fillStart = performance.now();
    await prefill(store);
    const fillMs = performance.now() - fillStart;
    // What autovacuum would have done by now: the planner needs the table's statistics.
    if (database === "postgres") await sql`analyze messages`.execute(db.db);
    const timings: number[] = [];
    const perQuery: BenchRow[] = [];
    for (const q of queries()) {
      const times: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const start = performance.now();
        await keyword.search(area, q.query, { limit: 10, since: q.since });
        times.push(performance.now() - start);
      }
      // The first rounds warm the caches and the JIT; the rest are what a search costs.
      const warm = times.slice(5);
      timings.push(...warm);
      perQuery.push({
        benchmark: BENCHMARK,
        database,
        case: q.name,
        metric: "p50",
        value: round(summarize(warm).p50),
        unit: "ms",
      });
    }
    const all = summarize(timings);
    const top = await keyword.search(area, "blue heron", { limit: 10 });
    const phraseFirst =
      top.length === 10 &&
      top.slice(0, EVENTS / PHRASE_EVERY).every((h) => h.snippet.includes(PHRASE.join(" ")));
    const base = {
      benchmark: BENCHMARK,
      database,
      case: `${EVENTS.toLocaleString("en-US")} events, one conversation`,
    };
    return [
      {
        ...base,
        metric: "search p50",
        value: round(all.p50),
        unit: "ms",
        target: `< ${TARGET_MS} ms`,
        ok: all.p50 < TARGET_MS,
      },
      { ...base, metric: "search p99", value: round(all.p99), unit: "ms" },
      {
        ...base,
        metric: "exact phrase ranked first",
        value: phraseFirst ? 1 : 0,
        unit: "",
        target: "1",
        ok: phraseFirst,
        note: `"blue heron": the ${EVENTS / PHRASE_EVERY} events with "blue heron lake" above the ${EVENTS / SCATTERED_EVERY} with the words apart`,
      },
      {
        ...base,
        metric: "storing (with indexing)",
        value: round(fillMs / 1000, 1),
        unit: "s",
        note: `${BATCH} events per append`,
      },
      ...perQuery,
    ];
  } finally {
    await db.close();
    await bench.dispose();
  }
}

/** search_history's cost at 100,000 events in one conversation, per database and query kind. */
export const searchBenchmark = (options: DatabaseBenchOptions): Promise<BenchRow[]> =>
  onEachDatabase(options, benchDatabase);
