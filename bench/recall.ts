import { sql } from "kysely";
import { RATE_LIMIT_BACKOFF } from "../src/agent/gemini-client.js";
import { type DatabaseKind, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createLogger } from "../src/logger.js";
import { EMBEDDING_DIMENSIONS, type Embed } from "../src/recall/gemini-embedder.js";
import { createMeaning } from "../src/recall/meaning.js";
import { createRecall } from "../src/recall/recall.js";
import { createSharedLimit } from "../src/retry/shared-limit.js";
import { scopeOfKey } from "../src/scope/recall-scope.js";
import type { SessionEvent } from "../src/session/events.js";
import { createSessionStore, type SessionStore } from "../src/session/store.js";
import { fakeEmbedding } from "../test/fakes/gemini-embeddings.js";
import { createBenchDatabase, type DatabaseBenchOptions, onEachDatabase } from "./databases.js";
import type { BenchRow } from "./run.js";
import { random } from "./search.js";
import { round, summarize } from "./stats.js";

const BENCHMARK = "recall";
const EVENTS = 100_000;
const CONVERSATIONS = 30;
const USER = 5_550_001;
const GROUP = -1_005_550_001;
const GROUP_EVENTS = 2_000;
const BATCH = 500;
const ROUNDS = 15;
const TARGET_MS = 50;
const K = 5;

/**
 * Facts planted among the filler, each with a question by its own words and one by paraphrase
 * (synonyms the fake embedder puts in the same direction, no word in common).
 */
const FACTS = [
  [
    "my sister recommended Trattoria Lupa for dinner",
    "Trattoria Lupa",
    "where did my sibling suggest we eat",
  ],
  [
    "the physician found an allergy to penicillin",
    "penicillin",
    "what intolerance did the doctor find",
  ],
  ["the apartment passcode is 4471", "passcode 4471", "what pin opens the flat"],
  ["the vehicle for the office is a blue Skoda", "Skoda", "which car do I use for work"],
  ["our kitten was born on the ninth of May", "kitten born", "when is the cat birthday"],
  [
    "my visa for the employer expires in June",
    "visa expires",
    "when does my passport for the job run out",
  ],
  ["our puppy gets salmon kibble for dinner", "salmon kibble", "what meal does the dog get"],
  ["my brother drives a red vehicle", "brother drives", "what automobile has my sibling"],
  [
    "my daughter is allergic to the kitten",
    "daughter allergic",
    "who has an intolerance to the cat",
  ],
  [
    "my sister was born on the second of March",
    "sister born",
    "when is the birthday of my sibling",
  ],
] as const;

/** Real words sprinkled into the filler, so that meaning has near misses to tell apart. */
const DISTRACTORS = ["dinner", "car", "office", "dog", "doctor", "born", "flat", "code", "lunch"];

const SYLLABLES = ["ka", "ri", "to", "mo", "ne", "sa", "lu", "pe", "zo", "vi", "da", "gu", "en"];

function fillerText(next: () => number): string {
  const words = Array.from({ length: 6 + Math.floor(next() * 12) }, () => {
    let word = "";
    for (let s = 0; s < 2 + Math.floor(next() * 3); s++) {
      word += SYLLABLES[Math.floor(next() * SYLLABLES.length)];
    }
    return word;
  });
  if (next() < 0.05) words.push(DISTRACTORS[Math.floor(next() * DISTRACTORS.length)] as string);
  return words.join(" ");
}

const said = (text: string, role: "user" | "model"): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts: [{ kind: "text", text }],
});

const topic = (n: number) => `${USER}:${n + 1}`;

/** Fills the person's 30 topics and a group; returns the ids of the planted facts. */
async function prefill(store: SessionStore): Promise<number[]> {
  const next = random(11);
  const perConversation = EVENTS / CONVERSATIONS;
  const plantAt = new Map(
    FACTS.map((fact, i) => [Math.floor(((i + 0.5) * EVENTS) / FACTS.length), fact[0]]),
  );
  const factIds: number[] = [];
  let index = 0;
  for (let c = 0; c < CONVERSATIONS; c++) {
    for (let done = 0; done < perConversation; done += BATCH) {
      const size = Math.min(BATCH, perConversation - done);
      const texts = Array.from({ length: size }, () => {
        const planted = plantAt.get(index++);
        return planted ?? fillerText(next);
      });
      const stored = await store.append(
        topic(c),
        texts.map((text, i) => ({ event: said(text, i % 2 === 0 ? "user" : "model") })),
      );
      stored.forEach((s, i) => {
        if (FACTS.some((f) => f[0] === texts[i])) factIds.push(s.id);
      });
    }
  }
  for (let done = 0; done < GROUP_EVENTS; done += BATCH) {
    await store.append(
      String(GROUP),
      Array.from({ length: BATCH }, (_, i) => ({
        event: said(fillerText(next), i % 2 ? "model" : "user"),
      })),
    );
  }
  return factIds;
}

const fakeEmbed: Embed = async (texts) => texts.map((t) => fakeEmbedding(t, EMBEDDING_DIMENSIONS));

async function benchDatabase(
  database: DatabaseKind,
  options: DatabaseBenchOptions,
): Promise<BenchRow[]> {
  const logger = createLogger({ level: "silent", secrets: [] });
  const bench = await createBenchDatabase(database, options.postgresUrl);
  const handle = openDatabase(bench.target);
  try {
    await migrateToLatest(handle.db, logger);
    const store = createSessionStore({ db: handle.db, logger });
    options.progress?.(
      `recall: ${database}, storing ${EVENTS.toLocaleString("en-US")} events in ${CONVERSATIONS} conversations`,
    );
    const factIds = await prefill(store);
    const meaning = await createMeaning({
      config: {
        geminiEmbeddingModel: "fake-embedding",
        geminiApiKey: "bench",
        geminiBaseUrl: undefined,
      },
      database: handle,
      limit: createSharedLimit({ policy: RATE_LIMIT_BACKOFF }),
      logger,
      embed: fakeEmbed,
    });
    if (!meaning) throw new Error("recall by meaning did not start");
    options.progress?.(`recall: ${database}, embedding the backlog (instant fake embedder)`);
    const backfillStart = performance.now();
    await meaning.worker.drain();
    const backfillS = (performance.now() - backfillStart) / 1000;
    if (database === "postgres") await sql`analyze`.execute(handle.db);
    const recall = createRecall({ db: handle.db, loadContext: store.loadContext, meaning });
    const asking = (chatId: string) => ({ chatId, scope: scopeOfKey(chatId) });
    const newTopic = asking(topic(CONVERSATIONS + 1));
    const area = await recall.areaOf(newTopic);
    const keyword = (q: string) => recall.keyword.search(area, q, { limit: K });
    const hybrid = (q: string) => recall.search(newTopic, q, { limit: K });
    const recallAt = async (search: (q: string) => Promise<{ id: number }[]>, which: 1 | 2) => {
      let hits = 0;
      for (const [i, fact] of FACTS.entries()) {
        const found = await search(fact[which]);
        if (found.some((h) => h.id === factIds[i])) hits++;
      }
      return hits / FACTS.length;
    };
    const time = async (search: (q: string) => Promise<unknown>) => {
      const times: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const fact of FACTS) {
          const start = performance.now();
          await search(fact[r % 2 === 0 ? 2 : 1]);
          times.push(performance.now() - start);
        }
      }
      return summarize(times.slice(FACTS.length));
    };
    const keywordMs = await time(keyword);
    const hybridMs = await time(hybrid);
    const inGroup = asking(`${GROUP}:9`);
    let leaked = 0;
    for (const fact of FACTS) {
      for (const q of [fact[1], fact[2]]) {
        const found = await recall.search(inGroup, q, { limit: 50 });
        leaked += found.filter((h) => factIds.includes(h.id)).length;
      }
    }
    const base = {
      benchmark: BENCHMARK,
      database,
      case: `${EVENTS.toLocaleString("en-US")} events, ${CONVERSATIONS} topics, asked from a new one`,
    };
    const engine = meaning.vectors.engine;
    return [
      {
        ...base,
        metric: "recall@5 keyword-only, by the fact's words",
        value: await recallAt(keyword, 1),
        unit: "",
      },
      {
        ...base,
        metric: "recall@5 keyword-only, by paraphrase",
        value: await recallAt(keyword, 2),
        unit: "",
      },
      {
        ...base,
        metric: "recall@5 hybrid, by the fact's words",
        value: await recallAt(hybrid, 1),
        unit: "",
      },
      {
        ...base,
        metric: "recall@5 hybrid, by paraphrase",
        value: await recallAt(hybrid, 2),
        unit: "",
        note: "fake embedder: synonyms share a direction",
      },
      {
        ...base,
        metric: "keyword search p50",
        value: round(keywordMs.p50),
        unit: "ms",
        target: `< ${TARGET_MS} ms`,
        ok: keywordMs.p50 < TARGET_MS,
      },
      {
        ...base,
        metric: "hybrid search p50",
        value: round(hybridMs.p50),
        unit: "ms",
        target: `< ${TARGET_MS} ms`,
        ok: hybridMs.p50 < TARGET_MS,
        note: `vectors: ${engine}, ${EMBEDDING_DIMENSIONS} dimensions; the query's embedding is instant here`,
      },
      { ...base, metric: "hybrid search p99", value: round(hybridMs.p99), unit: "ms" },
      {
        ...base,
        metric: "private facts found from a group",
        value: leaked,
        unit: "",
        target: "0",
        ok: leaked === 0,
      },
      {
        ...base,
        metric: "embedding backfill",
        value: round(EVENTS / backfillS),
        unit: "events/s",
        note: "Koroku's own cost per event, with an embedder that answers at once",
      },
    ];
  } finally {
    await handle.close();
    await bench.dispose();
  }
}

/** Recall across one person's conversations, by words and by meaning, on each database. */
export const recallBenchmark = (options: DatabaseBenchOptions): Promise<BenchRow[]> =>
  onEachDatabase(options, benchDatabase);
