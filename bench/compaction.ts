import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelClient } from "../src/agent/model-client.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { type RecordedRequest, startFakeGemini, text } from "../test/fakes/gemini.js";
import { call } from "../test/fakes/gemini-steps.js";
import type { BenchRow } from "./run.js";
import { round, summarize } from "./stats.js";

const TURNS = 300;
const CHAT_MODEL = "chat-model";
const SUMMARY_MODEL = "summary-model";

const sentence = (n: number) =>
  `Turn ${n}: let us look at the report for section ${n} and decide what to change next in the plan. `;

/**
 * One scripted 300-turn conversation (text answers, a tool call every third turn) through the
 * real agent and store against the in-process fake Gemini, with the default compaction budgets
 * or with compaction off. Reports the prompt tokens each chat request carried.
 */
async function converse(compaction: boolean) {
  const fake = await startFakeGemini();
  const dir = mkdtempSync(join(tmpdir(), "koroku-bench-compaction-"));
  const logger = createLogger({ level: "silent", secrets: [] });
  const config = loadConfig(
    {
      GEMINI_API_KEY: "bench",
      GEMINI_BASE_URL: fake.baseUrl,
      GEMINI_MODEL: CHAT_MODEL,
      GEMINI_COMPACTION_MODEL: SUMMARY_MODEL,
      DATABASE_URL: `sqlite:${join(dir, "bench.db")}`,
      MEMORY_DIR: join(dir, "memory"),
      WORKSPACE_DIR: join(dir, "workspace"),
      COMPACTION_MAX_EVENTS: compaction ? "30" : "0",
      COMPACTION_MAX_TOKENS: compaction ? "200000" : "0",
    },
    { requireTelegram: false },
  );
  // Time spent waiting on the summary model, so a compaction's own cost can be told apart.
  let summaryMs = 0;
  const app = await createApp(config, logger, {
    wrapModel: (gemini): ModelClient => ({
      async generate(request) {
        const started = performance.now();
        try {
          return await gemini.generate(request);
        } finally {
          if (request.model === SUMMARY_MODEL) summaryMs += performance.now() - started;
        }
      },
    }),
  });
  try {
    const { agent, hooks } = app;
    const compactionMs: number[] = [];
    let summaryBefore = 0;
    hooks.on("compaction", (e) => {
      compactionMs.push(e.durationMs - (summaryMs - summaryBefore));
      summaryBefore = summaryMs;
    });
    fake.setDefault((request: RecordedRequest) =>
      request.model === SUMMARY_MODEL
        ? text(
            `Summary: the user and Koroku worked through the report, section by section. ${sentence(0)}`,
          )
        : text(`${sentence(request.body.contents.length).repeat(6)}`),
    );
    for (let turn = 1; turn <= TURNS; turn++) {
      if (turn % 3 === 0) fake.scriptFor(CHAT_MODEL, call("get_current_time"));
      await agent.runTurn("bench", { text: sentence(turn).repeat(3) });
    }
    const tokens = fake.requests
      .filter((r) => r.model === CHAT_MODEL)
      .map((r) => Math.ceil(JSON.stringify(r.body.contents).length / 4));
    return { tokens, compactionMs };
  } finally {
    await app.database.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function compactionBenchmark(options: {
  progress?: (line: string) => void;
}): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const row = (r: Omit<BenchRow, "benchmark" | "database">) =>
    rows.push({ benchmark: "compaction", database: "sqlite", ...r });
  for (const compaction of [false, true]) {
    options.progress?.(
      `compaction: ${TURNS}-turn conversation, compaction ${compaction ? "on" : "off"}`,
    );
    const { tokens, compactionMs } = await converse(compaction);
    const label = compaction ? "compaction on (30 events / 200k tokens)" : "compaction off";
    const last = tokens.slice(-30);
    row({
      case: label,
      metric: "context tokens per request, max",
      value: Math.max(...tokens),
      unit: "tokens",
    });
    row({
      case: label,
      metric: "context tokens per request, last 30 mean",
      value: Math.round(last.reduce((a, b) => a + b, 0) / last.length),
      unit: "tokens",
      ...(compaction
        ? {
            target: "bounded",
            ok: Math.max(...tokens.slice(-100)) <= Math.max(...tokens.slice(0, 200)),
          }
        : {}),
      note: "contents sent with each chat-model request (characters / 4)",
    });
    if (compaction) {
      const s = summarize(compactionMs);
      row({ case: label, metric: "compactions", value: compactionMs.length, unit: "" });
      row({
        case: label,
        metric: "compaction time without the model, p50",
        value: round(s.p50),
        unit: "ms",
        note: "plan, transcript, store the summary, append the memory file, reload",
      });
      row({
        case: label,
        metric: "compaction time without the model, max",
        value: round(s.max),
        unit: "ms",
      });
    }
  }
  return rows;
}
