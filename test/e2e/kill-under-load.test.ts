import { describe, expect, it } from "vitest";
import { runKillUnderLoad } from "../../bench/kill-under-load.js";
import { DATABASE_KINDS, POSTGRES_URL, requirePostgres } from "../helpers/databases.js";

const KILLS = 3;

describe.each(DATABASE_KINDS)("kill -9 under load, on %s", (database) => {
  it("loses no update and answers none again more than once per kill", async () => {
    if (database === "postgres") requirePostgres();
    const result = await runKillUnderLoad({
      database,
      postgresUrl: POSTGRES_URL,
      chats: 30,
      messagesPerChat: 4,
      modelDelayMs: 300,
      kills: KILLS,
    });
    expect(result.lost).toBe(0);
    expect(result.chatsInFlightPerKill).toHaveLength(KILLS);
    // Each kill can make a restart send again only what was on its way to Telegram at the kill:
    // an update is answered at most once more per kill, and never twice without one.
    expect(result.mostAnswersOfOne).toBeLessThanOrEqual(1 + KILLS);
    expect(result.duplicatesWithoutKill).toBe(0);
  });
});
