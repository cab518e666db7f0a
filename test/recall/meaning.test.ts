import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEmbeddingQueue, EMBEDDINGS_LOCK_KEY } from "../../src/recall/embedding-queue.js";
import {
  CHUNK_CHARS,
  chunksOf,
  createEmbeddingWorker,
  MAX_CHUNKS,
} from "../../src/recall/embedding-worker.js";
import {
  EMBEDDING_DIMENSIONS,
  type Embed,
  EmbeddingFailedError,
} from "../../src/recall/gemini-embedder.js";
import { followMovedConversation } from "../../src/recall/meaning.js";
import { createRecall, fuseRanks } from "../../src/recall/recall.js";
import { createVectorSearch, type VectorEngine } from "../../src/recall/vector-search.js";
import { scopeOfKey } from "../../src/scope/recall-scope.js";
import { fakeEmbedding } from "../fakes/gemini-embeddings.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { eventOf, mediaPart, said } from "../helpers/events.js";
import { type Harness, startHarness } from "../helpers/harness.js";
import { installPgvectorStandIn } from "../helpers/pgvector-stand-in.js";
import { eventually } from "../helpers/service-process.js";

const USER = 8201;
const GROUP = -1008201;
const FACT = "my sister recommended Trattoria Lupa for dinner";
const QUESTION = "Where did my sibling suggest we eat?";

const fakeEmbed: Embed = async (texts) => texts.map((t) => fakeEmbedding(t, EMBEDDING_DIMENSIONS));

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, v, i) => sum + v * (b[i] ?? 0), 0);

describe("the fake embedder", () => {
  it("points synonyms one way and unrelated words elsewhere", () => {
    const sibling = fakeEmbedding("sibling", 256);
    expect(dot(sibling, fakeEmbedding("sister", 256))).toBeCloseTo(1, 5);
    expect(Math.abs(dot(sibling, fakeEmbedding("invoice", 256)))).toBeLessThan(0.3);
    expect(dot(fakeEmbedding(QUESTION, 256), fakeEmbedding(FACT, 256))).toBeGreaterThan(0.6);
  });
});

describe("recall pieces", () => {
  it("fuses rankings so that what both find comes first", () => {
    expect(
      fuseRanks([
        [1, 2, 3],
        [3, 4],
      ]),
    ).toEqual([3, 1, 4, 2]);
    expect(fuseRanks([[], [7, 5]])).toEqual([7, 5]);
  });

  it("cuts a long text into chunks between words, at most MAX_CHUNKS", () => {
    const words = "lorem ipsum dolor ".repeat(1_000);
    const chunks = chunksOf(words);
    expect(chunks).toHaveLength(MAX_CHUNKS);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(CHUNK_CHARS);
      expect(chunk).toMatch(/^lorem|^ipsum|^dolor/);
    }
    expect(chunksOf("  short \n text ")).toEqual(["short text"]);
    expect(chunksOf("   ")).toEqual([]);
  });
});

describe.each(DATABASE_KINDS)("recall by meaning on %s", (kind) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ kind });
  });
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  const asking = (chatId: string) => ({ chatId, scope: scopeOfKey(chatId) });
  const snippets = async (chatId: string, query: string) =>
    (await h.app.recall.search(asking(chatId), query, { limit: 5 })).map((hit) => hit.snippet);

  it("finds a paraphrase by meaning that keyword search misses, in the scope only", async () => {
    const { store } = h.app;
    await store.append(`${USER}:1`, [{ event: said(FACT) }, { event: said("Enjoy!", "model") }]);
    await store.append(`${USER}:1`, [
      { event: said("the invoice for the boiler is due on Friday") },
      { event: said("remind me to water the tomatoes") },
    ]);
    await store.append(String(GROUP), [
      { event: said("our sister company suggested a lunch place") },
    ]);
    await h.app.embeddingWorker?.drain();
    expect(h.fake.embeddings.length).toBeGreaterThan(0);
    expect(h.fake.embeddings[0]).toMatchObject({
      model: "gemini-embedding-001",
      method: "batchEmbedContents",
    });

    const area = await h.app.recall.areaOf(asking(`${USER}:2`));
    expect(await h.app.recall.keyword.search(area, QUESTION, { limit: 5 })).toEqual([]);
    const found = await snippets(`${USER}:2`, QUESTION);
    expect(found[0]).toBe(FACT);
    expect(found).not.toContain("our sister company suggested a lunch place");
    // The group finds its own, never the private fact.
    const inGroup = await snippets(`${GROUP}:3`, QUESTION);
    expect(inGroup).toEqual(["our sister company suggested a lunch place"]);
    // Keyword matches still rank, with their time filters.
    expect(await snippets(`${USER}:2`, "boiler invoice")).toContain(
      "the invoice for the boiler is due on Friday",
    );
    expect(
      await h.app.recall.search(asking(`${USER}:2`), "boiler invoice", {
        limit: 5,
        until: "2000-01-01T00:00:00.000Z",
      }),
    ).toEqual([]);
  });

  // Both engines that can run here: pgvector's query against a stand-in for its operator.
  const engines: VectorEngine[] = kind === "postgres" ? ["exact", "pgvector"] : ["exact"];

  it.each(engines)(
    "ranks only among the vectors the filter lets through (%s): a match behind 250 nearer ones it leaves out",
    async (engine) => {
      const { db } = h.app.database;
      const { store } = h.app;
      // The very question, 250 times: nearer to it than any fact, and more than a cut of 200.
      await store.append(
        `${USER}:1`,
        Array.from({ length: 250 }, () => ({ event: said(QUESTION) })),
      );
      const [fact] = await store.append(`${USER}:2`, [{ event: said(FACT) }]);
      await h.app.embeddingWorker?.drain();
      await db
        .updateTable("messages")
        .set({ created_at: "2020-01-01T00:00:00.000Z" })
        .where("chat_id", "=", `${USER}:1`)
        .execute();
      if (engine === "pgvector") await installPgvectorStandIn(db);
      const recall = createRecall({
        db,
        loadContext: store.loadContext,
        // Read in pages of 100: the fact is in the third.
        meaning: {
          embed: fakeEmbed,
          vectors: createVectorSearch({ db, engine, loadPageRows: 100 }),
        },
      });
      const found = async (chatId: string, dates: { since?: string; until?: string } = {}) =>
        (await recall.search(asking(chatId), QUESTION, { limit: 5, ...dates })).map(
          (hit) => hit.id,
        );

      expect(await found(`${USER}:3`, { since: "2021-01-01T00:00:00.000Z" })).toEqual([fact?.id]);
      expect(await found(`${USER}:3`, { until: "2020-01-01T00:00:00.000Z" })).toEqual([]);
      // The asking conversation's context holds the 250.
      expect(await found(`${USER}:1`)).toEqual([fact?.id]);
      // Forgotten after the exact engine read their vectors, which it still holds.
      const asked = await h.app.forgetting.ask(`private-${USER}`, "sibling");
      expect(asked.matching).toBe(250);
      await h.app.forgetting.confirm(`private-${USER}`, asked.requestId as number);
      expect(await found(`${USER}:3`)).toEqual([fact?.id]);
    },
  );

  it("backfills history stored before, resumes after a restart, and forgets what /forget hid", async () => {
    const { store } = h.app;
    for (let i = 0; i < 70; i++) {
      await store.append(`${USER}:${i % 3}`, [{ event: said(`note ${i} about the red car`) }]);
    }
    const worker = h.app.embeddingWorker;
    if (!worker) throw new Error("recall by meaning is off");
    // One batch (64 events), then the process "dies".
    expect(await worker.runOnce()).toBe(64);
    const embedded = async () =>
      Number(
        (
          await h.app.database.db
            .selectFrom("embeddings")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await embedded()).toBe(64);
    const again = await h.restart();
    await again.embeddingWorker?.drain();
    expect(await embedded()).toBe(70);
    expect(await again.embeddingWorker?.runOnce()).toBe(0);

    const found = await again.recall.search(asking(`${USER}:5`), "vehicle", { limit: 3 });
    expect(found).toHaveLength(3);
    const asked = await again.forgetting.ask(`private-${USER}`, "car");
    await again.forgetting.confirm(`private-${USER}`, asked.requestId as number);
    expect(await embedded()).toBe(0);
    expect(await again.recall.search(asking(`${USER}:5`), "vehicle", { limit: 3 })).toEqual([]);
  });

  it("takes a moved group's vectors into the new chat's scope, and /clear drops them", async () => {
    const old = "-8201";
    const moved = "-1008202";
    await h.app.store.append(old, [{ event: said(FACT) }]);
    await h.app.embeddingWorker?.drain();
    // The new chat's vectors are read before the move, from a vector stored after the old one.
    await h.app.store.append(moved, [{ event: said("which invoice is due?") }]);
    await h.app.embeddingWorker?.drain();
    expect(await snippets(`${moved}:4`, QUESTION)).toEqual(["which invoice is due?"]);
    await h.app.store.move(old, moved);
    expect(await snippets(`${moved}:4`, QUESTION)).toEqual(["which invoice is due?"]);
    await followMovedConversation(h.app.database.db, moved);
    expect(await snippets(`${moved}:4`, QUESTION)).toEqual([FACT, "which invoice is due?"]);
    // /clear takes the vectors with the events.
    await h.app.store.clear(moved);
    const left = await h.app.database.db.selectFrom("embeddings").selectAll().execute();
    expect(left).toEqual([]);
  });

  it("stops at once while Gemini hangs on its batch, and gives the batch back untried", async () => {
    const worker = h.app.embeddingWorker;
    if (!worker) throw new Error("expected recall by meaning");
    await h.app.store.append(String(USER), [{ event: said("one") }]);
    const stalled = h.fake.stallEmbeddings();
    worker.start();
    await stalled.arrived;
    // Far below the batch's deadline of a minute, which the stop would otherwise wait for.
    const late = new Promise<"late">((resolve) => setTimeout(resolve, 10_000, "late").unref());
    expect(await Promise.race([worker.stop(), late])).toBeUndefined();
    await stalled.hungUp;
    // Claimable at once by another worker, the cut batch not counted as an attempt.
    const other = createEmbeddingQueue({ db: h.app.database.db, worker: "b", leaseMs: 60_000 });
    expect((await other.claim(10, Date.now())).map((c) => c.attempts)).toEqual([1]);
  });

  it("embeds what was said during a Gemini outage once it is back; drops only texts Gemini refuses", async () => {
    const { db } = h.app.database;
    await h.app.store.append(String(USER), [{ event: said(FACT) }]);
    let failure: EmbeddingFailedError | undefined = new EmbeddingFailedError("overloaded", 503);
    const embed: Embed = async (texts, task, signal) => {
      if (failure) throw failure;
      return fakeEmbed(texts, task, signal);
    };
    const queue = createEmbeddingQueue({ db, worker: "w", leaseMs: 60_000 });
    const worker = createEmbeddingWorker({ db, queue, embed, model: "m", logger: h.app.logger });
    // Every 31 s for five minutes, longer than five tries 30 s apart.
    let now = Date.now();
    for (let t = 0; t < 10; t++, now += 31_000) {
      await expect(worker.runOnce(() => now)).rejects.toThrow("overloaded");
    }
    failure = undefined;
    await worker.drain(() => now);
    expect(await db.selectFrom("embeddings").select("message_id").execute()).toHaveLength(1);

    await h.app.store.append(String(USER), [{ event: said("a text Gemini refuses") }]);
    failure = new EmbeddingFailedError("invalid argument", 400, true);
    for (let t = 0; t < 5; t++, now += 31_000) {
      await expect(worker.runOnce(() => now)).rejects.toThrow("invalid argument");
    }
    expect(await db.selectFrom("embedding_queue").select("message_id").execute()).toEqual([]);
  });

  it("lets one worker's claim stand until its lease runs out, then another takes it", async () => {
    const { db } = h.app.database;
    await h.app.store.append(String(USER), [{ event: said("one") }, { event: said("two") }]);
    const at = 1_000_000;
    const a = createEmbeddingQueue({ db, worker: "a", leaseMs: 60_000 });
    const b = createEmbeddingQueue({ db, worker: "b", leaseMs: 60_000 });
    await a.intake();
    expect((await a.claim(10, at)).map((c) => c.attempts)).toEqual([1, 1]);
    expect(await b.claim(10, at + 60_000)).toEqual([]);
    expect(await a.backlog()).toBe(2);
    const taken = await b.claim(10, at + 60_001);
    expect(taken.map((c) => c.attempts)).toEqual([2, 2]);
    // The first worker's late result is not stored: the items are the second's now.
    const vector = { scope: `private-${USER}`, model: "m", values: new Float32Array(256) };
    const late = new Map(taken.map((c) => [c.messageId, [vector]]));
    expect(await a.complete(late, [...late.keys()])).toBe(0);
    expect(await b.complete(late, [...late.keys()])).toBe(2);
    expect(await b.backlog()).toBe(0);
  });

  it.runIf(kind === "postgres")(
    "stores vectors only while no other replica is storing, so their ids commit in order",
    async () => {
      const { db } = h.app.database;
      const { config } = h.app;
      if (config.database.kind !== "postgres") throw new Error("expected PostgreSQL");
      await h.app.store.append(String(USER), [{ event: said("one") }]);
      const queue = createEmbeddingQueue({ db, worker: "a", leaseMs: 60_000 });
      await queue.intake();
      const [item] = await queue.claim(1, Date.now());
      const vector = { scope: `private-${USER}`, model: "m", values: new Float32Array(256) };
      // Another replica, in the middle of storing its vectors.
      const other = new pg.Client({ connectionString: config.database.connectionString });
      await other.connect();
      try {
        await other.query("begin");
        await other.query("select pg_advisory_xact_lock($1)", [EMBEDDINGS_LOCK_KEY]);
        let stored: number | undefined;
        const storing = queue
          .complete(new Map([[item?.messageId as number, [vector]]]), [item?.messageId as number])
          .then((n) => {
            stored = n;
          });
        // Tests of other schemas share the database's advisory locks: any wait on this one counts.
        await eventually(async () => {
          const { rows } = await other.query<{ n: number }>(
            `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted
              and pg_backend_pid() = any(pg_blocking_pids(pid))`,
          );
          return (rows[0]?.n ?? 0) > 0;
        });
        expect(stored).toBeUndefined();
        await other.query("commit");
        await storing;
        expect(stored).toBe(1);
      } finally {
        await other.end();
      }
    },
  );

  it("embeds a voice note again once its transcript is written, whatever was embedded before", async () => {
    const { db } = h.app.database;
    const worker = h.app.embeddingWorker;
    if (!worker) throw new Error("expected recall by meaning");
    const chat = String(USER);
    const [voice] = await h.app.store.append(chat, [
      { event: eventOf("user", [mediaPart({ media: "voice", mimeType: "audio/ogg" })]) },
    ]);
    if (!voice) throw new Error("stored nothing");
    await worker.drain();
    // The transcript comes after the answer, and a batch may be under way with the old text.
    const queue = createEmbeddingQueue({ db, worker: "busy", leaseMs: 60_000 });
    const withWords = {
      ...voice.event,
      parts: voice.event.parts.map((part) => ({ ...part, transcript: FACT })),
    } as typeof voice.event;
    expect(await h.app.store.rewrite(chat, voice.id, withWords)).toBe(true);
    const [claimed] = await queue.claim(10, Date.now());
    expect(claimed?.messageId).toBe(voice.id);
    await h.app.store.rewrite(chat, voice.id, withWords);
    const old = {
      scope: `private-${USER}`,
      model: "m",
      values: new Float32Array(EMBEDDING_DIMENSIONS),
    };
    expect(await queue.complete(new Map([[voice.id, [old]]]), [voice.id])).toBe(0);
    await worker.drain();
    const [hit] = await h.app.recall.search(asking(`${USER}:2`), QUESTION, { limit: 1 });
    expect(hit?.id).toBe(voice.id);
    const vectors = await db.selectFrom("embeddings").select("message_id").execute();
    expect(vectors.filter((v) => v.message_id === voice.id)).toHaveLength(1);
  });

  it.each(engines)(
    "compares a query with its own model's vectors only, and embeds the history again after a change of model (%s)",
    async (engine) => {
      const { db } = h.app.database;
      const [fact] = await h.app.store.append(String(USER), [{ event: said(FACT) }]);
      const workerOf = (model: string) =>
        createEmbeddingWorker({
          db,
          queue: createEmbeddingQueue({ db, worker: model, leaseMs: 60_000 }),
          embed: fakeEmbed,
          model,
          logger: h.app.logger,
        });
      await workerOf("old-model").drain();
      if (engine === "pgvector") await installPgvectorStandIn(db);
      const area = { scope: `private-${USER}` };
      const [query] = await fakeEmbed([QUESTION], "RETRIEVAL_QUERY");
      const nearest = (model: string) =>
        createVectorSearch({ db, engine, model }).nearest(area, query as Float32Array, {
          limit: 1,
        });
      expect(await nearest("old-model")).toEqual([fact?.id]);
      expect(await nearest("new-model")).toEqual([]);

      const queue = createEmbeddingQueue({ db, worker: "new-model", leaseMs: 60_000 });
      expect(await queue.adoptModel("new-model")).toBe(1);
      // A second replica starting with it finds the change made.
      expect(await queue.adoptModel("new-model")).toBe(0);
      const queued = await db.selectFrom("embedding_queue").select("message_id").execute();
      expect(queued.map((q) => Number(q.message_id))).toEqual([fact?.id]);
      await workerOf("new-model").drain();
      expect(await nearest("new-model")).toEqual([fact?.id]);
      const vectors = await db.selectFrom("embeddings").select(["message_id", "model"]).execute();
      expect(vectors.map((v) => [Number(v.message_id), v.model])).toEqual([
        [fact?.id, "new-model"],
      ]);
    },
  );

  it("stores each vector to the last bit", async () => {
    const { db } = h.app.database;
    const [stored] = await h.app.store.append(String(USER), [{ event: said("one") }]);
    const queue = createEmbeddingQueue({ db, worker: "a", leaseMs: 60_000 });
    await queue.intake();
    const [claimed] = await queue.claim(10, Date.now());
    expect(claimed?.messageId).toBe(stored?.id);
    const values = Float32Array.from([1 / 3, -0.1, 1e-38, 0, 3.4e38, 2 ** -149]);
    const vector = { scope: `private-${USER}`, model: "m", values };
    expect(await queue.complete(new Map([[stored?.id ?? 0, [vector]]]), [stored?.id ?? 0])).toBe(1);
    const row = await db.selectFrom("embeddings").select("embedding").executeTakeFirstOrThrow();
    const read = Array.isArray(row.embedding)
      ? Float32Array.from(row.embedding)
      : new Float32Array(new Uint8Array(row.embedding).buffer);
    expect(read).toEqual(values);
  });
});

describe("recall by meaning turned off", () => {
  it("searches by words only and embeds nothing with GEMINI_EMBEDDING_MODEL empty", async () => {
    const h = await startHarness({ env: { GEMINI_EMBEDDING_MODEL: "" } });
    try {
      expect(h.app.embeddingWorker).toBeUndefined();
      await h.app.store.append(`${USER}:1`, [{ event: said(FACT) }]);
      const found = await h.app.recall.search(
        { chatId: `${USER}:2`, scope: scopeOfKey(`${USER}:2`) },
        QUESTION,
        { limit: 5 },
      );
      expect(found).toEqual([]);
      expect(h.fake.embeddings).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
