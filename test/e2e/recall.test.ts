import type { FunctionResponse } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RecordedRequest, text } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { eventually, type ServiceWorld, startWorld } from "../helpers/service-process.js";

/**
 * Issue 33's first promise through the real service: a fact told in one private topic is
 * embedded in the background (its progress in /metrics) and found by meaning, through the
 * model's search_history, from another topic, and never from a group.
 */

const USER = 4_330_001;
const GROUP = -100_433_000;
const TOKEN = "scrape-recall";
const FACT = "my sister recommended Trattoria Lupa for dinner";
const QUESTION = "where did my sibling suggest we eat";

type Match = { snippet: string };

/** The snippets search_history answered with; undefined when it answered an error. */
const searchResult = (r: RecordedRequest | undefined): string[] | undefined => {
  const response = (r?.body.contents.at(-1)?.parts ?? []).find((p) => p.functionResponse)
    ?.functionResponse as FunctionResponse | undefined;
  const output = response?.response?.output as { matches?: Match[] } | undefined;
  return output?.matches?.map((m) => m.snippet);
};

describe.each(DATABASE_KINDS)("recall of the person, end to end on %s", (kind) => {
  let w: ServiceWorld;
  const waitForText = (chatId: number, words: string) =>
    eventually(() => w.telegram.sent.find((m) => m.chat_id === chatId && m.plain_text === words));
  const metric = async (series: string) => {
    const res = await fetch(`${w.service.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const line = (await res.text()).split("\n").find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  /** A turn whose model searches the history for QUESTION; returns what the search gave it. */
  async function searchFrom(where: { chatId: number; threadId?: number }, words: string) {
    const before = w.gemini.requests.length;
    const done = `searched: ${words}`;
    w.gemini.script(call("search_history", { query: QUESTION }), text(done));
    await w.say(words, { userId: USER, ...where });
    await waitForText(where.chatId, done);
    return searchResult(w.gemini.requests[before + 1]);
  }

  beforeAll(async () => {
    w = await startWorld({
      kind,
      env: { ALLOWED_USER_IDS: String(USER), METRICS_TOKEN: TOKEN },
      telegram: { topicsInPrivateChats: true },
    });
  });
  afterAll(async () => {
    await w?.close();
  });

  it("embeds a fact told in one topic, and another topic finds it by meaning, a group never", async () => {
    w.gemini.script(text("Noted."));
    await w.say(FACT, { userId: USER, chatId: USER, threadId: 3 });
    await waitForText(USER, "Noted.");
    // The fact and the answer, embedded by the service's own worker.
    await eventually(async () => ((await metric("koroku_embedded_events_total")) ?? 0) >= 2);
    await eventually(async () => (await metric("koroku_embedding_backlog")) === 0);

    expect(await searchFrom({ chatId: USER, threadId: 4 }, "what was that place?")).toContain(FACT);
    // The group's only event is the question its context holds: nothing to find.
    expect(await searchFrom({ chatId: GROUP }, "@koroku_test_bot what was that place?")).toEqual(
      [],
    );
    expect(w.gemini.embeddings.length).toBeGreaterThan(0);
    expect(w.gemini.rejections).toEqual([]);
    expect(w.service.proc.exitCode).toBeNull();
  });
});
