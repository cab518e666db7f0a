import { describe, expect, it } from "vitest";
import { createLogger, createScrubber } from "../../src/logger.js";
import { readableLogLines } from "../../src/terminal/log-lines.js";
import { captureLogger } from "../helpers/logs.js";

describe("logger", () => {
  it("redacts the token, key and secret wherever they appear", () => {
    const token = "123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOpp";
    const { logger, lines } = captureLogger([token, "gemini-key-xyz", "hook-secret"]);
    const child = logger.child({ chat_id: "42", update_id: 7 });
    child.info(
      {
        url: `https://api.telegram.org/bot${token}/sendMessage`,
        nested: { k: ["gemini-key-xyz"] },
      },
      "calling hook-secret",
    );
    child.error({ err: new Error(`failed for ${token}`) }, "boom");
    logger.warn("unknown token in url /bot987654:ZZyyXXwwVVuuTTssRRqqPPooNN/getMe");
    const text = JSON.stringify(lines);
    expect(text).not.toContain(token);
    expect(text).not.toContain("gemini-key-xyz");
    expect(text).not.toContain("hook-secret");
    expect(text).not.toContain("ZZyyXXwwVVuuTTssRRqqPPooNN");
    expect(lines[0]).toMatchObject({ chat_id: "42", update_id: 7, msg: "calling [REDACTED]" });
    expect(lines[1]?.err).toMatchObject({ message: "failed for [REDACTED]" });
  });

  it("keeps an error's code and its cause, scrubbed, but no object beside them", () => {
    const { logger, lines } = captureLogger(["s3cret-password"]);
    const cause = Object.assign(new Error("connect ECONNREFUSED 10.0.0.5:5432"), {
      code: "ECONNREFUSED",
      port: 5432,
      request: { headers: { authorization: "x" } },
    });
    logger.error({ err: new TypeError("fetch failed", { cause }) }, "HTTP request failed");
    const sqlState = Object.assign(new Error("auth failed for s3cret-password"), {
      code: "28P01",
      severity: "FATAL s3cret-password",
      detail: "Failing row contains (42, my HIV test came back).",
    });
    logger.error({ err: new AggregateError([sqlState], "all failed") }, "could not connect");
    expect(lines[0]?.err).toMatchObject({
      type: "TypeError",
      message: "fetch failed",
      cause: { type: "Error", code: "ECONNREFUSED", port: 5432 },
    });
    expect(JSON.stringify(lines[0]?.err)).not.toContain("authorization");
    expect(lines[1]?.err).toMatchObject({
      errors: [
        { code: "28P01", severity: "FATAL [REDACTED]", message: "auth failed for [REDACTED]" },
      ],
    });
    // What users wrote, quoted by pg's detail, stays out of the log.
    expect(JSON.stringify(lines[1]?.err)).not.toContain("HIV");
  });

  it("catches a secret percent-encoded, HTML-escaped or split by invisible characters", () => {
    const token = "123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOpp";
    const password = "p&ss<w>rd";
    const scrub = createScrubber([token, password]);
    const disguised = [
      encodeURIComponent(token),
      encodeURIComponent(token).replace("%3A", "%3a"),
      `123\u200b456:AA\u2060bb\ufeffCCddEEffGGhhIIjjKKllMMnnOOpp`,
      `123456:AAbbCC\u00addd\u200dEEffGGhhIIjjKKllMMnnOOpp`,
      "p&amp;ss&lt;w&gt;rd",
      encodeURIComponent(password),
    ];
    for (const form of disguised) {
      expect(scrub(`before ${form} after`)).toBe("before [REDACTED] after");
    }
    // A token the process does not hold, in a percent-encoded Bot API URL.
    expect(scrub("/bot987654%3AZZyyXXwwVVuuTTssRRqqPPooNN/getMe")).toBe("/bot[REDACTED]/getMe");
    expect(scrub("nothing secret: 123456 and AAbb")).toBe("nothing secret: 123456 and AAbb");
  });

  it("prints a record's reason in its readable line, scrubbed", () => {
    const printed: string[] = [];
    const logger = createLogger({
      level: "warn",
      secrets: ["key-4711-secret"],
      destination: readableLogLines((line) => printed.push(line)),
    });
    logger.warn({ attempt: 1, reason: "echoed key-4711-secret" }, "Gemini call failed; retrying");
    logger.warn({ err: new Error("broke"), reason: "ignored" }, "with an error");
    expect(printed).toEqual([
      "warn: Gemini call failed; retrying: echoed [REDACTED]\n",
      "warn: with an error: broke\n",
    ]);
  });
});
