import { describe, expect, it } from "vitest";
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
});
