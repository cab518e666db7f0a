import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/metrics/metrics.js";

const sampleOf = (text: string, name: string) =>
  text.split("\n").find((line) => line.startsWith(`${name} `));

describe("the gauges read at each scrape", () => {
  it("are NaN when what they read cannot be read, not the last value or 0", async () => {
    const metrics = createMetrics();
    let inbox: () => Promise<{ pending: number; oldestPendingAgeSeconds: number }> = async () => ({
      pending: 3,
      oldestPendingAgeSeconds: 200,
    });
    let backlog: () => Promise<number> = async () => 42;
    metrics.watchInbox(() => inbox());
    metrics.watchEmbeddingBacklog(() => backlog());
    const before = await metrics.registry.metrics();
    expect(sampleOf(before, "koroku_inbox_oldest_pending_age_seconds")).toBe(
      "koroku_inbox_oldest_pending_age_seconds 200",
    );
    expect(sampleOf(before, "koroku_embedding_backlog")).toBe("koroku_embedding_backlog 42");
    // The database goes away.
    inbox = () => Promise.reject(new Error("connection refused"));
    backlog = () => Promise.reject(new Error("connection refused"));
    const during = await metrics.registry.metrics();
    expect(sampleOf(during, "koroku_inbox_pending")).toBe("koroku_inbox_pending Nan");
    expect(sampleOf(during, "koroku_inbox_oldest_pending_age_seconds")).toBe(
      "koroku_inbox_oldest_pending_age_seconds Nan",
    );
    expect(sampleOf(during, "koroku_embedding_backlog")).toBe("koroku_embedding_backlog Nan");
  });
});
