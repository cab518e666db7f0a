import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addUsage, type ModelClient, NO_USAGE, type Usage } from "../src/agent/model-client.js";
import { SUMMARY_INSTRUCTION } from "../src/agent/prompts.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { costOf, priceOf } from "../src/usage/prices.js";
import {
  call,
  type RecordedRequest,
  type Step,
  startFakeGemini,
  text,
} from "../test/fakes/gemini.js";
import type { BenchRow } from "./run.js";
import { round } from "./stats.js";

const TURNS = 300;
/** The default GEMINI_MODEL, whose price and cache minimum (4,096 tokens) apply to the turns. */
const MODEL = "gemini-3.8-flash";

/** Deterministic numbers in [0, 1), so every run holds the same conversation. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const VOCABULARY = (
  "the plan budget report meeting draft invoice client deadline travel flight hotel recipe " +
  "garden notes project server backup photo review question answer idea list week month " +
  "change update reason result number price order address message family weekend doctor"
).split(" ");

/**
 * A personal assistant's conversation: questions of 15–120 words, answers of 60–350, and every
 * third turn work with tools (a file of 1–8 KB read, the history searched, the clock asked; now
 * and then two rounds). Summaries are about 250 words.
 */
function conversation(random: () => number) {
  const words = (min: number, max: number) => {
    const n = min + Math.floor(random() * (max - min + 1));
    return Array.from({ length: n }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)])
      .join(" ")
      .replace(/^./, (c) => c.toUpperCase());
  };
  const files = Array.from({ length: 12 }, (_, i) => ({
    path: `notes/file-${i}.md`,
    body: `${words(200, 1_400)}.\n`,
  }));
  const toolCalls = (turn: number): Step[] => {
    if (turn % 3 !== 0) return [];
    const file = files[Math.floor(random() * files.length)] as (typeof files)[number];
    const choice = random();
    if (choice < 0.5) return [call("read_file", { path: file.path })];
    if (choice < 0.8) return [call("search_history", { query: words(1, 3) })];
    return [call("get_current_time"), call("read_file", { path: file.path })];
  };
  return {
    files,
    question: () => `${words(15, 120)}?`,
    answer: () => `${words(60, 350)}.`,
    summary: () => `${words(230, 270)}.`,
    toolCalls,
  };
}

/** Summaries go to the compaction model (its default), priced at its own rates. */
type Call = { summary: boolean; model: string; usage: Usage };

/** The 300 turns through the real agent, store and compactor, against the caching fake. */
async function converse(): Promise<Call[]> {
  const fake = await startFakeGemini();
  const dir = mkdtempSync(join(tmpdir(), "koroku-bench-caching-"));
  const workspace = join(dir, "workspace");
  const logger = createLogger({ level: "silent", secrets: [] });
  const config = loadConfig(
    {
      GEMINI_API_KEY: "bench",
      GEMINI_BASE_URL: fake.baseUrl,
      GEMINI_MODEL: MODEL,
      DATABASE_URL: `sqlite:${join(dir, "bench.db")}`,
      MEMORY_DIR: join(dir, "memory"),
      WORKSPACE_DIR: workspace,
    },
    { requireTelegram: false },
  );
  const calls: Call[] = [];
  const app = await createApp(config, logger, {
    wrapModel: (gemini): ModelClient => ({
      async generate(request) {
        const result = await gemini.generate(request);
        calls.push({
          summary: request.systemInstruction === SUMMARY_INSTRUCTION,
          model: request.model,
          usage: result.usage,
        });
        return result;
      },
    }),
  });
  try {
    const talk = conversation(seeded(24));
    for (const file of talk.files) {
      mkdirSync(join(workspace, "notes"), { recursive: true });
      writeFileSync(join(workspace, file.path), file.body);
    }
    fake.setDefault((request: RecordedRequest) =>
      JSON.stringify(request.body.systemInstruction).includes("memory of a conversation")
        ? text(talk.summary())
        : text(talk.answer()),
    );
    for (let turn = 1; turn <= TURNS; turn++) {
      fake.script(...talk.toolCalls(turn));
      await app.agent.runTurn("bench", { text: talk.question() });
    }
    if (fake.rejections.length > 0) {
      throw new Error(`the fake Gemini refused a request: ${fake.rejections[0]?.message}`);
    }
    return calls;
  } finally {
    await app.database.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sum = (calls: readonly Call[]): Usage => {
  const total = { ...NO_USAGE };
  for (const c of calls) addUsage(total, c.usage);
  return total;
};

const share = (usage: Usage) =>
  usage.promptTokens === 0 ? 0 : usage.cachedTokens / usage.promptTokens;

/**
 * Gemini's implicit cache over a 300-turn conversation at the default compaction budgets: the
 * share of prompt tokens the fake reported cached (the prefix each request shares with a recent
 * one, from 4,096 tokens), and what a turn costs at the price table's rates with and without it.
 */
export async function cachingBenchmark(options: {
  progress?: (line: string) => void;
}): Promise<BenchRow[]> {
  options.progress?.(`caching: ${TURNS}-turn conversation, compaction at its defaults`);
  const calls = await converse();
  const now = new Date();
  const priceFor = (model: string) => {
    const price = priceOf(model, now);
    if (!price) throw new Error(`no price for ${model} in src/usage/prices.ts`);
    return price;
  };
  const price = priceFor(MODEL);
  const costPerTurn = (cached: boolean) =>
    calls.reduce(
      (dollars, c) =>
        dollars + costOf(cached ? c.usage : { ...c.usage, cachedTokens: 0 }, priceFor(c.model)),
      0,
    ) / TURNS;
  const all = sum(calls);
  const turns = sum(calls.filter((c) => !c.summary));
  const label = `${TURNS} turns, compaction at defaults (30 events / 200k tokens)`;
  const rows: BenchRow[] = [];
  const row = (r: Omit<BenchRow, "benchmark" | "database" | "case">) =>
    rows.push({ benchmark: "caching", database: "sqlite", case: label, ...r });
  const cached = share(all);
  row({
    metric: "prompt tokens cached, all calls",
    value: round(cached * 100, 1),
    unit: "%",
    target: "≥ 70 %",
    ok: cached >= 0.7,
    note: `${all.cachedTokens.toLocaleString("en-US")} of ${all.promptTokens.toLocaleString("en-US")} prompt tokens, ${calls.length} model calls`,
  });
  row({
    metric: "prompt tokens cached, turn calls only",
    value: round(share(turns) * 100, 1),
    unit: "%",
    note: `${calls.filter((c) => c.summary).length} summary calls left out`,
  });
  row({
    metric: "prompt tokens per turn, mean",
    value: Math.round(all.promptTokens / TURNS),
    unit: "tokens",
  });
  const withCache = costPerTurn(true);
  const without = costPerTurn(false);
  row({
    metric: "cost per turn with caching",
    value: round(withCache * 1_000, 3),
    unit: "$ per 1,000 turns",
    note: `turns on ${MODEL} at $${price.input}/$${price.cachedInput}/$${price.output} per 1M input/cached/output tokens, summaries at their model's rates`,
  });
  row({
    metric: "cost per turn without caching",
    value: round(without * 1_000, 3),
    unit: "$ per 1,000 turns",
    note: `caching saves ${round((1 - withCache / without) * 100, 1)} %`,
  });
  return rows;
}
