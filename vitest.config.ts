import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A host starved of CPU takes 10-20 s to start a service process; these only bound a test that
    // is failing, and every wait inside a test polls for its condition.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Vitest's default is one worker fewer than the CPUs: one on a 2-core machine. Most of the
    // suite waits on service processes, fake servers and timers, not on its own CPU.
    maxWorkers: 3,
    globalSetup: ["./test/helpers/global-setup.ts"],
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
