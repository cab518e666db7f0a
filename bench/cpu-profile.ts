/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, or BENCH_CPU_PROFILE_DIR for the e2e bench):
 * where the process spent its own time, by function and by module.
 *
 *   node dist-bench/bench/cpu-profile.js <file.cpuprofile> [how many functions, default 25]
 */
import { readFileSync } from "node:fs";
import { REPO_ROOT } from "../test/helpers/spawn-service.js";

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame };
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };

const PSEUDO_FUNCTIONS = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

function isProfile(value: unknown): value is Profile {
  if (typeof value !== "object" || value === null) return false;
  const { nodes, samples, timeDeltas } = value as Record<string, unknown>;
  return Array.isArray(nodes) && Array.isArray(samples) && Array.isArray(timeDeltas);
}

function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, "");
  const inModules = path.lastIndexOf("/node_modules/");
  if (inModules >= 0) return path.slice(inModules + "/node_modules/".length);
  return path.startsWith(REPO_ROOT) ? path.slice(REPO_ROOT.length) : path;
}

/** The package, the project file, or the Node.js internal module a frame belongs to. */
function moduleOf(frame: CallFrame): string {
  if (PSEUDO_FUNCTIONS.has(frame.functionName)) return frame.functionName;
  if (frame.url === "") return "(V8 builtins and native code)";
  const path = shortUrl(frame.url);
  if (frame.url.includes("/node_modules/")) {
    const [scope, name] = path.split("/");
    return scope?.startsWith("@") ? `${scope}/${name}` : (scope ?? path);
  }
  return path;
}

function functionOf(frame: CallFrame): string {
  if (PSEUDO_FUNCTIONS.has(frame.functionName) || frame.url === "") {
    return frame.functionName || "(anonymous)";
  }
  return `${frame.functionName || "(anonymous)"}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

/** Self time in ms per key; a sample owns the interval until the next sample. */
function selfTimes(profile: Profile, keyOf: (frame: CallFrame) => string): Map<string, number> {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const times = new Map<string, number>();
  profile.samples.forEach((nodeId, i) => {
    const frame = frames.get(nodeId);
    const micros = profile.timeDeltas[i + 1] ?? 0;
    if (!frame) return;
    const key = keyOf(frame);
    times.set(key, (times.get(key) ?? 0) + micros / 1_000);
  });
  return times;
}

function table(title: string, times: Map<string, number>, busyMs: number, top: number): string {
  const rows = [...times]
    .filter(([key]) => key !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => {
      const share = `${((ms / busyMs) * 100).toFixed(1)}%`.padStart(6);
      return `${ms.toFixed(0).padStart(8)} ms ${share}  ${key}`;
    });
  return [title, ...rows].join("\n");
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (file === undefined) {
    throw new Error("Usage: node dist-bench/bench/cpu-profile.js <file.cpuprofile> [top]");
  }
  const profile: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!isProfile(profile)) throw new Error(`${file} is not a V8 .cpuprofile`);
  const top = Number(topArg ?? 25);
  const byModule = selfTimes(profile, moduleOf);
  const totalMs = [...byModule.values()].reduce((sum, ms) => sum + ms, 0);
  const busyMs = totalMs - (byModule.get("(idle)") ?? 0);
  process.stdout.write(
    [
      `${file}: ${totalMs.toFixed(0)} ms profiled, ${busyMs.toFixed(0)} ms busy (shares below are of busy time)`,
      "",
      table("Self time by module", byModule, busyMs, top),
      "",
      table("Self time by function", selfTimes(profile, functionOf), busyMs, top),
      "",
    ].join("\n"),
  );
}

main();
