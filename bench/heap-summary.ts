/**
 * Where a service's heap went, from a sampling heap profile of the load bench's burst
 * (BENCH_HEAP_PROFILE_DIR): the bytes of each library or runtime part whose code allocated them,
 * per turn; with --sites, the functions that allocated most.
 *
 *   node dist-bench/bench/heap-summary.js <file>.heapprofile <turns> [--sites]
 */
import { readFileSync } from "node:fs";

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { callFrame: CallFrame; selfSize: number; children: ProfileNode[] };

/** The library, runtime part or Koroku folder a script belongs to. */
function partOf(url: string): string {
  if (url === "") return "(native)";
  const library = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (library) return library;
  const own = /\/(dist(?:-bench)?\/[^/]+\/[^/]+)\//.exec(url)?.[1];
  if (own) return own;
  return url.replace(/^node:internal\/(deps\/)?/, "node:").replace(/\/[^/]*$/, "");
}

const [file, turnsArg, flag] = process.argv.slice(2);
const turns = Number(turnsArg);
if (!file || !Number.isFinite(turns) || turns <= 0) {
  throw new Error("usage: heap-summary.js <file>.heapprofile <turns> [--sites]");
}
const head = (JSON.parse(readFileSync(file, "utf8")) as { head: ProfileNode }).head;
const totals = new Map<string, number>();
let all = 0;
const visit = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const key =
    flag === "--sites"
      ? `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "")}:${lineNumber + 1}`
      : partOf(url);
  totals.set(key, (totals.get(key) ?? 0) + node.selfSize);
  all += node.selfSize;
  for (const child of node.children) visit(child);
};
visit(head);
const kb = (bytes: number) => `${(bytes / 1024 / turns).toFixed(1).padStart(8)} KB`;
console.log(`${kb(all)}  a turn over ${turns} turns`);
for (const [key, bytes] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${kb(bytes)}  ${key}`);
}
