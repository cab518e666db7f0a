import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, `Tests: N passed, N failed, N skipped`, that any CI can read;
 * files that failed outside their tests (a set-up hook, an import) are counted after it, so that a
 * run none of whose tests failed cannot look green when whole files did.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const count = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    let brokenFiles = 0;
    for (const module of testModules) {
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        count[test.result().state]++;
        if (test.result().state === "failed") failedTests++;
      }
      if (module.state() === "failed" && failedTests === 0) brokenFiles++;
    }
    const broken = brokenFiles === 0 ? "" : `; ${brokenFiles} file(s) failed outside their tests`;
    process.stdout.write(
      `\nTests: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped${broken}\n`,
    );
  }
}
