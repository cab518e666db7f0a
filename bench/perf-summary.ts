/**
 * Where a service's CPU went, from a recording of the load bench's burst (BENCH_PERF_DIR): each
 * sample is put in the library, runtime part or thread its stack shows (docs/decisions/0011-cpu-per-turn.md).
 *
 *   perf script -i <dir>/<name>.perf.data | node dist-bench/bench/perf-summary.js <turns> [--modules]
 *
 * By default the samples are summed into the groups of the decision record's table; --modules
 * lists the finer classes they are made of.
 */
import { createInterface } from "node:readline";

type Frame = { symbol: string; object: string };
type Sample = { thread: string; ms: number; frames: Frame[] };

const HEADER = /^(\S.*?)\s+\d+\s+[\d.]+:\s+(\d+) cpu-clock/;
const FRAME = /^\s*[0-9a-f]+ (.*) \((.*)\)$/;
/** A JavaScript frame of --perf-basic-prof: "JS:*name file:line:column", with a tier mark. */
const JS_FRAME = /^JS:\S?'?(.*?) ?((?:file:\/\/|node:|\/)\S*?):\d+:\d+$/;
const GC =
  /Heap::|Scavenger|MarkCompact|Sweeper|ConcurrentMarking|MinorMark|Marking|Evacuat|ScavengeJob/;
const COMPILE =
  /v8::internal::(compiler::|Compiler::|maglev::|Maglev|turboshaft::|Parser|BytecodeGenerator|interpreter::|baseline::)|CompileLazy|OptimizeJob|CompileOptimized/;

async function readSamples(): Promise<Sample[]> {
  const samples: Sample[] = [];
  for await (const line of createInterface({ input: process.stdin })) {
    const header = HEADER.exec(line);
    if (header) {
      samples.push({ thread: header[1] ?? "", ms: Number(header[2]) / 1e6, frames: [] });
      continue;
    }
    const frame = FRAME.exec(line);
    if (frame) {
      const symbol = (frame[1] ?? "").replace(/\+0x[0-9a-f]+$/, "");
      samples.at(-1)?.frames.push({ symbol, object: frame[2] ?? "" });
    }
  }
  return samples;
}

/** A script's library (node_modules), Node.js's internal module, or the project's file. */
function moduleOf(url: string): string {
  if (url.startsWith("node:")) return url.replace(/^node:internal\/(deps\/)?/, "node:");
  const inModules = url.lastIndexOf("/node_modules/");
  if (inModules >= 0) {
    const [scope, name] = url.slice(inModules + "/node_modules/".length).split("/");
    return scope?.startsWith("@") ? `${scope}/${name}` : (scope ?? url);
  }
  const dist = url.indexOf("/dist/");
  return dist >= 0 ? url.slice(dist + 1) : url;
}

/** The frames on top of the first JavaScript one: what native code that script called. */
function nativeOnTop(frames: readonly Frame[]): Frame[] {
  const js = frames.findIndex((frame) => frame.symbol.startsWith("JS:"));
  return js < 0 ? [...frames] : frames.slice(0, js);
}

function classOf(sample: Sample): string {
  const { frames } = sample;
  const symbols = frames.map((frame) => frame.symbol).join("\n");
  if (sample.thread === "V8Worker") {
    if (GC.test(symbols)) return "V8 helper threads: GC";
    return COMPILE.test(symbols) ? "V8 helper threads: JIT" : "V8 helper threads: other";
  }
  const thread = sample.thread === "MainThread" ? "" : `[${sample.thread}] `;
  if (/checkpoint-worker|sqlite3WalCheckpoint/.test(symbols)) return `${thread}SQLite checkpoint`;
  const native = nativeOnTop(frames);
  if (native.some((frame) => frame.object.endsWith(".node"))) return `${thread}SQLite (native)`;
  if (native.some((frame) => GC.test(frame.symbol))) return `${thread}GC`;
  if (native.some((frame) => COMPILE.test(frame.symbol))) return `${thread}JIT`;
  const script = frames.map((frame) => JS_FRAME.exec(frame.symbol)).find((match) => match);
  if (script) return `${thread}${moduleOf(script[2] ?? "")}`;
  return `${thread}native (${native.find((frame) => !frame.object.includes("kernel"))?.symbol.slice(0, 50) ?? "kernel"})`;
}

const GROUPS: readonly [RegExp, string][] = [
  [/GC/, "GC (V8's helper threads and each thread's own)"],
  [/JIT/, "JIT compilation"],
  [/V8 helper threads: other/, "V8's helper threads, other"],
  [/SQLite checkpoint/, "SQLite checkpoint thread"],
  [/^\[WorkerThread\]/, "courier thread (sends an answer, records it)"],
  [/SQLite \(native\)/, "SQLite (native, main thread)"],
  [/kysely/, "Kysely"],
  [/^pg(-.*)?$/, "pg driver"],
  [/undici/, "fetch (undici)"],
  [/@google\/genai/, "@google/genai"],
  [/grammy|node-fetch|abort-controller|event-target-shim/, "grammY (and its node-fetch)"],
  [/webstreams/, "web streams"],
  [/markdown-it|dist\/src\/render\//, "rendering (markdown-it, src/render)"],
  [/^zod$/, "zod"],
  [/^dist\/src\//, "Koroku's own code (dist/src)"],
  [/^dist\/bench\//, "the floor's own code"],
  [/^node:/, "Node.js runtime (http, net, streams, timers, JSON, workers)"],
  [/^native/, "malloc and other native code"],
];

const groupOf = (name: string): string =>
  GROUPS.find(([pattern]) => pattern.test(name))?.[1] ?? `other libraries (${name})`;

async function main(): Promise<void> {
  const [turnsArg, option] = process.argv.slice(2);
  const turns = Number(turnsArg);
  if (!Number.isInteger(turns) || turns < 1) {
    throw new Error(
      "Usage: perf script -i <file> | node dist-bench/bench/perf-summary.js <turns> [--modules]",
    );
  }
  const totals = new Map<string, number>();
  let all = 0;
  for (const sample of await readSamples()) {
    const name = classOf(sample);
    const key = option === "--modules" ? name : groupOf(name);
    totals.set(key, (totals.get(key) ?? 0) + sample.ms);
    all += sample.ms;
  }
  const rows = [...totals].sort((a, b) => b[1] - a[1]);
  const line = (ms: number, label: string) =>
    `${(ms / turns).toFixed(3).padStart(8)} ms ${`${((ms / all) * 100).toFixed(1)}%`.padStart(6)}  ${label}`;
  process.stdout.write(
    `${[line(all, `CPU a turn over ${turns} turns, all threads`), ...rows.map(([label, ms]) => line(ms, label))].join("\n")}\n`,
  );
}

await main();
