import { spawn } from "node:child_process";

/**
 * Node options that let Linux perf name the service's JavaScript frames: V8 writes
 * /tmp/perf-<pid>.map as it compiles, and interpreted frames get a native frame of their own.
 */
export const PERF_NODE_ARGS = ["--perf-basic-prof", "--interpreted-frames-native-stack"];

/**
 * Samples the CPU time of process `pid`, every thread of it (the main thread, V8's helper threads
 * that mark and compile, the courier and checkpoint threads), into `file` until stopped. perf's
 * cpu-clock counts only time on a CPU, where V8's own profiler samples the main thread's wall
 * clock: on a shared host that charges a syscall for the time other processes ran.
 */
export function recordCpu(pid: number, file: string): { stop(): Promise<void> } {
  const perf = spawn(
    "perf",
    ["record", "-e", "cpu-clock", "-F", "499", "-g", "-p", String(pid), "-o", file],
    { stdio: "ignore" },
  );
  let failure: Error | undefined;
  // Stopped by SIGINT, perf writes its file and ends by that signal.
  const exited = new Promise<boolean>((resolve) => {
    perf.on("close", (code, signal) => resolve(code === 0 || signal === "SIGINT"));
    perf.on("error", (error) => {
      failure = new Error(`BENCH_PERF_DIR needs Linux perf on the PATH (${error.message})`);
      resolve(false);
    });
  });
  return {
    async stop() {
      if (perf.exitCode === null && perf.signalCode === null) perf.kill("SIGINT");
      const ok = await exited;
      if (failure) throw failure;
      if (!ok) {
        throw new Error(
          `perf record failed (exit ${perf.exitCode}): it needs root or a lower kernel.perf_event_paranoid`,
        );
      }
    },
  };
}
