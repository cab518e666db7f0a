import { describe, expect, it } from "vitest";
import { createLivePacer } from "../../src/answer/live-pacer.js";

describe("live updates of answers written at once", () => {
  it("share one budget: the more answers stream, the further apart each one's updates", () => {
    const pacer = createLivePacer(10);
    expect(pacer.spacingMs()).toBe(0);
    const [first, second] = [pacer.join(), pacer.join()];
    expect(pacer.spacingMs()).toBe(200);
    first();
    first();
    expect(pacer.spacingMs()).toBe(100);
    second();
    expect(pacer.spacingMs()).toBe(0);
  });
});
