import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { call, hang, type RecordedRequest, type Step, status, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import { inboxStatus, query } from "../helpers/database-rows.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../helpers/databases.js";
import { startPrivatePostgres } from "../helpers/private-postgres.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

/**
 * The fault suite: the service is killed at each step of a turn, loses its database, and meets
 * a failing Gemini and Telegram. After each fault: no update is lost, none is answered twice,
 * each user message is stored once, and the strict fake Gemini accepts the next request (the
 * stored history is still valid for Gemini).
 */

const QUESTION = "what is the answer?";
const ANSWER = "the answer";
const FOLLOW_UP = "the follow-up answer";

const textsTo = (w: ServiceWorld, chatId = ALLOWED_USER) =>
  w.telegram.sent.filter((m) => m.chat_id === chatId).map((m) => m.plain_text);

const lastUserText = (r: RecordedRequest) => wordsOf(r.body.contents.at(-1)?.parts);
const echo = (r: RecordedRequest) => text(`echo: ${lastUserText(r)}`);

/** Collects the service's stderr, where an uncaught error's stack lands. */
function watchStderr(w: ServiceWorld): () => string {
  let printed = "";
  w.service.proc.stderr?.on("data", (chunk: Buffer) => {
    printed += chunk.toString("utf8");
  });
  return () => printed;
}

async function health(w: ServiceWorld, stderr: () => string): Promise<number> {
  try {
    return (await fetch(`${w.service.baseUrl}/healthz`)).status;
  } catch (error) {
    throw new Error(`GET /healthz failed (${error}); the service's stderr:\n${stderr()}`);
  }
}

const storedUserMessages = async (db: TestDatabase, updateId: number) => {
  const [row] = await query(
    db,
    "select count(*) as n from messages where update_id = ? and is_user_message = 1",
    updateId,
  );
  return Number(row?.n);
};

const finished = (status: unknown) => status === "done" || status === "failed";

/**
 * No update lost (each one done) and each user message stored exactly once. An update is marked
 * done just after its answer is sent, so this waits for that first.
 */
async function expectSettled(db: TestDatabase, updateIds: readonly number[]): Promise<void> {
  for (const id of updateIds) {
    const status = await eventually(async () => {
      const current = await inboxStatus(db, id);
      return finished(current) && current;
    });
    expect(status, `inbox status of update ${id}`).toBe("done");
    expect(await storedUserMessages(db, id), `user messages stored for update ${id}`).toBe(1);
  }
}

/**
 * Sends one more message in the chat: the strict fake validates the whole stored history, and
 * since a chat's updates run in order, nothing of the earlier update can be sent after this.
 */
async function followUp(w: ServiceWorld, chatId = ALLOWED_USER): Promise<number> {
  w.gemini.script(text(FOLLOW_UP));
  const id = await w.say("and then?", { userId: chatId });
  await eventually(() => textsTo(w, chatId).includes(FOLLOW_UP));
  expect(w.gemini.rejections).toEqual([]);
  return id;
}

/** Holds the next model call until the returned function is called, then echoes. */
function holdNextModelCall(w: ServiceWorld): () => void {
  let openGate = () => {};
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  w.gemini.script(async (request) => {
    await gate;
    return echo(request);
  });
  return openGate;
}

/** A message update with the next update id, for a test to post (and post again) itself. */
function nextTextUpdate(w: ServiceWorld, message: string) {
  const id = w.nextUpdateId();
  return {
    id,
    update: buildTextUpdate({ updateId: id, messageId: id, text: message, userId: ALLOWED_USER }),
  };
}

async function world(options: Parameters<typeof startWorld>[0] = {}): Promise<ServiceWorld> {
  const w = await startWorld({ ...options, env: { ...allowBuiltinTools(), ...options.env } });
  onTestFinished(() => w.close());
  return w;
}

type KillPoint = {
  step: string;
  env?: Record<string, string>;
  /**
   * Scripts the fakes so the first process stops at this step and cannot move past it; returns
   * what resolves once it is there.
   */
  stopAt(w: ServiceWorld): (updateId: number) => Promise<unknown>;
  /** Gemini requests the restarted process needs to finish the turn. */
  requestsAfterRestart: number;
};

const KILL_POINTS: KillPoint[] = [
  {
    step: "after the user event is stored",
    stopAt: (w) => {
      w.gemini.setDefault(hang());
      return (id) => eventually(async () => (await storedUserMessages(w.db, id)) > 0);
    },
    requestsAfterRestart: 1,
  },
  {
    step: "during the model call",
    stopAt: (w) => {
      w.gemini.setDefault(hang());
      return () => eventually(() => w.gemini.requests.length === 1);
    },
    requestsAfterRestart: 1,
  },
  {
    // The second model call is only made once the call and its tool's response are stored.
    step: "after the model's function call and its response are stored",
    stopAt: (w) => {
      w.gemini.script(call("get_current_time"));
      w.gemini.setDefault(hang());
      return () => eventually(() => w.gemini.requests.length === 2);
    },
    requestsAfterRestart: 1,
  },
  {
    step: "during a tool",
    env: { ENABLE_SHELL_TOOL: "true" },
    stopAt: (w) => {
      w.gemini.script(call("run_command", { command: "sleep 20" }));
      w.gemini.setDefault(hang());
      // The model's function call is stored before its tool starts.
      return () =>
        eventually(async () => {
          const [row] = await query(
            w.db,
            "select count(*) as n from messages where role = 'model' and event_json like '%run_command%'",
          );
          return Number(row?.n) > 0;
        });
    },
    requestsAfterRestart: 1,
  },
  {
    step: "before delivery",
    stopAt: (w) => {
      const held = w.telegram.holdNext("sendMessage");
      w.gemini.setDefault(text(ANSWER));
      return () => held.arrived;
    },
    requestsAfterRestart: 0,
  },
];

describe("kill -9 at each step of a turn", () => {
  it.each(KILL_POINTS)("$step: answered once after the restart", async (point) => {
    const w = await world({ env: point.env });
    const reached = point.stopAt(w);
    const id = await w.say(QUESTION);
    await reached(id);
    w.service.proc.kill("SIGKILL");
    await w.service.exited;

    const before = w.gemini.requests.length;
    w.gemini.setDefault(text(ANSWER));
    w.service = await w.start();
    await eventually(() => textsTo(w).includes(ANSWER));
    expect(w.gemini.requests.length - before).toBe(point.requestsAfterRestart);

    const next = await followUp(w);
    expect(textsTo(w)).toEqual([ANSWER, FOLLOW_UP]);
    await expectSettled(w.db, [id, next]);
    const seen = JSON.stringify(w.gemini.requests.at(-1)?.body.contents);
    expect(seen.split(QUESTION)).toHaveLength(2);
  });
});

describe("Gemini failing for a while", () => {
  let w: ServiceWorld;
  let proxy: TcpProxy;
  let nextUser = ALLOWED_USER;

  beforeAll(async () => {
    const users = Array.from({ length: 5 }, (_, i) => ALLOWED_USER + i);
    w = await startWorld({ env: { ALLOWED_USER_IDS: users.join(",") } });
    // The fake's port is known only now: run the service again with Gemini behind a proxy that
    // can drop the connection in the middle of a call.
    proxy = await startTcpProxy({
      host: "127.0.0.1",
      port: Number(new URL(w.gemini.baseUrl).port),
    });
    w.service.proc.kill("SIGTERM");
    await w.service.exited;
    w.service = await w.start({ GEMINI_BASE_URL: `http://127.0.0.1:${proxy.port}` });
  });
  afterAll(async () => {
    await w.close();
    await proxy.close();
  });

  /** Sends QUESTION from a new user; `failures` scripted steps precede the answer. */
  async function askThrough(failures: Step[], during?: () => Promise<void>) {
    const user = nextUser++;
    const before = w.gemini.requests.length;
    w.gemini.script(...failures, text(ANSWER));
    const id = await w.say(QUESTION, { userId: user });
    await during?.();
    await eventually(() => textsTo(w, user).includes(ANSWER));
    const requests = w.gemini.requests.slice(before);
    expect(requests).toHaveLength(failures.length + 1);
    const next = await followUp(w, user);
    expect(textsTo(w, user)).toEqual([ANSWER, FOLLOW_UP]);
    await expectSettled(w.db, [id, next]);
    return requests;
  }

  it("429 with a retry hint, then success: answered once, after the hinted delay", async () => {
    const [first, second] = await askThrough([status(429, undefined, { retryDelay: "1s" })]);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
  });

  it("500 then success: answered once", async () => {
    await askThrough([status(500)]);
  });

  it("503 twice then success: answered once", async () => {
    await askThrough([status(503), status(503)]);
  });

  // The service's per-attempt timeout is 60 s and no setting shortens it, so a hanging call is
  // ended here the other way a call dies: its connection drops.
  it("a call whose connection drops mid-way is retried: answered once", async () => {
    const before = w.gemini.requests.length;
    await askThrough([hang()], async () => {
      await eventually(() => w.gemini.requests.length === before + 1);
      proxy.dropConnections();
    });
  });
});

describe("Telegram failing while the answer is sent", () => {
  let w: ServiceWorld;
  let nextUser = ALLOWED_USER;

  beforeAll(async () => {
    const users = Array.from({ length: 4 }, (_, i) => ALLOWED_USER + i);
    w = await startWorld({ env: { ALLOWED_USER_IDS: users.join(",") } });
  });
  afterAll(() => w.close());

  /** One question from a new user, answered once, with one model call; returns the sends. */
  async function askWhileSending(timeoutMs?: number) {
    const user = nextUser++;
    const before = w.gemini.requests.length;
    w.gemini.script(text(ANSWER));
    const id = await w.say(QUESTION, { userId: user });
    await eventually(() => textsTo(w, user).includes(ANSWER), timeoutMs);
    expect(w.gemini.requests.length - before).toBe(1);
    const next = await followUp(w, user);
    expect(textsTo(w, user)).toEqual([ANSWER, FOLLOW_UP]);
    await expectSettled(w.db, [id, next]);
    return {
      id,
      sends: w.telegram.calls.filter(
        (c) => c.method === "sendMessage" && c.body.chat_id === user && c.body.text === ANSWER,
      ),
    };
  }

  it("429 with retry_after=1 on sendMessage: answered once, at least 1 s later", async () => {
    w.telegram.failNext("sendMessage", { error_code: 429, retry_after: 1 });
    const { sends } = await askWhileSending();
    expect(sends.map((c) => c.response?.ok)).toEqual([false, true]);
    expect((sends[1]?.at ?? 0) - (sends[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
  });

  // @grammyjs/auto-retry retries 5xx after 3 s, then 6 s, 12 s, 24 s: one failure shows the
  // retry, each more would cost the suite that much longer.
  it("502 on sendMessage: grammY retries, answered once, one model call", async () => {
    w.telegram.failNext("sendMessage", { error_code: 502 });
    const { sends } = await askWhileSending(60_000);
    expect(sends.map((c) => c.response?.ok)).toEqual([false, true]);
  });

  it("a long answer cut short by Telegram sends only its missing messages when it runs again", async () => {
    const user = nextUser++;
    const paragraphs = ["first", "second", "third"].map((word) => `${word} `.repeat(600).trim());
    const before = w.gemini.requests.length;
    w.gemini.script(text(paragraphs.join("\n\n")));
    const [first, second] = [
      w.telegram.holdNext("sendMessage"),
      w.telegram.holdNext("sendMessage"),
    ];
    const id = await w.say(QUESTION, { userId: user });
    await first.arrived;
    first.release();
    await second.arrived;
    // Refused outright (grammY does not retry a 403): the update fails after its first message.
    w.telegram.failNext("sendMessage", { error_code: 403 });
    second.release();

    await eventually(() => textsTo(w, user).length === 3);
    // Every word once, in order: no message of the answer went out twice.
    const words = (texts: string[]) => texts.join(" ").split(/\s+/);
    expect(words(textsTo(w, user))).toEqual(words(paragraphs));
    const sends = w.telegram.calls.filter(
      (c) => c.method === "sendMessage" && c.body.chat_id === user,
    );
    expect(sends.map((c) => c.response?.ok)).toEqual([true, false, true, true]);
    expect(w.gemini.requests.length - before).toBe(1);
    await expectSettled(w.db, [id]);
  });

  it("a flood wait grammY gives up on is waited out by the inbox, not retried at once", async () => {
    // A flood wait above the bot's 30 s cap is handed to the service instead of waited out.
    const user = nextUser++;
    w.telegram.failNext("sendMessage", { error_code: 429, retry_after: 60 });
    w.gemini.script(text(ANSWER));
    const id = await w.say(QUESTION, { userId: user });
    const [row] = await eventually(async () => {
      const rows = await query(
        w.db,
        "select status, attempts, lease_until, error from inbox where update_id = ?",
        id,
      );
      return rows[0]?.status === "pending" && rows[0]?.error ? rows : undefined;
    });
    expect(row?.attempts).toBe(1);
    expect(String(row?.error)).toContain("429");
    // Scheduled again after Telegram's retry_after, give or take the time the test took.
    expect(Number(row?.lease_until) - Date.now()).toBeGreaterThan(50_000);
    expect(textsTo(w, user)).toEqual([]);
  });
});

describe("PostgreSQL briefly unavailable", () => {
  const postgres = new URL(POSTGRES_URL);

  /**
   * An echoing service on the PostgreSQL at `url` (the schema startWorld makes stays unused), and
   * a check that it is still running.
   */
  async function echoingServiceOn(url: string, env: Record<string, string> = {}) {
    const w = await world({ kind: "postgres", env: { DATABASE_URL: url, ...env } });
    w.gemini.setDefault(echo);
    const stderr = watchStderr(w);
    const expectAlive = () =>
      expect(
        [w.service.proc.exitCode, w.service.proc.signalCode],
        `the service died; its stderr:\n${stderr()}`,
      ).toEqual([null, null]);
    return { w, stderr, expectAlive };
  }

  /** A service on its own schema, reaching PostgreSQL through a proxy the test can cut. */
  async function worldBehindProxy(env: Record<string, string> = {}) {
    const database = await createTestDatabase("postgres");
    onTestFinished(() => database.dispose());
    const proxy = await startTcpProxy({
      host: postgres.hostname,
      port: Number(postgres.port || 5432),
    });
    onTestFinished(() => proxy.close());
    const proxied = new URL(database.url);
    proxied.host = `127.0.0.1:${proxy.port}`;
    return { ...(await echoingServiceOn(proxied.toString(), env)), proxy, database };
  }

  it("refuses updates while it is away and answers every one once when it is back", async () => {
    const { w, proxy, database, stderr, expectAlive } = await worldBehindProxy();
    const first = await w.say("one");
    await eventually(() => textsTo(w).includes("echo: one"));
    await eventually(async () => finished(await inboxStatus(database, first)));

    proxy.cut();
    await eventually(async () => (await health(w, stderr)) === 503);
    const { id, update: during } = nextTextUpdate(w, "two");
    // Not stored: the 500 makes Telegram deliver it again.
    expect((await w.post(during)).status).toBe(500);
    expectAlive();

    proxy.restore();
    await eventually(async () => (await health(w, stderr)) === 200);
    expect((await w.post(during)).status).toBe(200);
    const after = await w.say("three");
    await eventually(() => textsTo(w).includes("echo: three"));

    const next = await followUp(w);
    expect(textsTo(w)).toEqual(["echo: one", "echo: two", "echo: three", FOLLOW_UP]);
    await expectSettled(database, [first, id, after, next]);
    expectAlive();
  });

  it("survives its connection dropping in the middle of a query", async () => {
    const { w, proxy, stderr, expectAlive } = await worldBehindProxy();
    expect(await health(w, stderr)).toBe(200);
    const cut = proxy.cutOnNextSend();
    // /healthz's write probe runs at most once a second. The next query on a pooled connection
    // (the probe's, or the dispatcher's) is cut before it reaches PostgreSQL, and new connections
    // are refused until restore(): the next probe fails either way.
    await eventually(async () => (await health(w, stderr)) === 503);
    await cut;
    proxy.restore();
    await eventually(async () => (await health(w, stderr)) === 200);
    await w.say("still there?");
    await eventually(() => textsTo(w).includes("echo: still there?"));
    expectAlive();
  });

  it("answers every update once when the PostgreSQL server itself crashes, mid-turn and between turns", async () => {
    const server = await startPrivatePostgres();
    onTestFinished(() => server.database.dispose());
    const { database } = server;
    const { w, stderr, expectAlive } = await echoingServiceOn(database.url, {
      INBOX_LEASE_SECONDS: "2",
    });
    const first = await w.say("one");
    await eventually(() => textsTo(w).includes("echo: one"));

    const openGate = holdNextModelCall(w);
    const id = await w.say("two");
    await eventually(() => w.gemini.requests.length === 2);
    // The server dies while the model is thinking: the turn's next write meets it gone.
    await server.crash();
    openGate();
    await eventually(() => w.service.logs.some((l) => l.update_id === id && Number(l.level) >= 40));
    await eventually(async () => (await health(w, stderr)) === 503);
    const { id: downId, update: during } = nextTextUpdate(w, "three");
    expect((await w.post(during)).status).toBe(500);

    await server.start();
    await eventually(async () => (await health(w, stderr)) === 200);
    expect((await w.post(during)).status).toBe(200);
    await eventually(() => textsTo(w).includes("echo: three"));

    const next = await followUp(w);
    expect(textsTo(w)).toEqual(["echo: one", "echo: two", "echo: three", FOLLOW_UP]);
    await expectSettled(database, [first, id, downId, next]);
    expectAlive();
  });

  it("answers once a turn whose database went away just after its answer was sent", async () => {
    // A lease short enough that an update not recorded as done would run again within the test,
    // and long enough that the service still waits for the database when the test restores it.
    const { w, proxy, database, expectAlive } = await worldBehindProxy({
      INBOX_LEASE_SECONDS: "10",
    });
    const send = w.telegram.holdNext("sendMessage");
    const id = await w.say("two");
    await send.arrived;
    proxy.cut();
    send.release();
    // The answer is out, and the database is back only once recording it has failed.
    await eventually(() => w.service.logs.some((l) => l.update_id === id && Number(l.level) >= 40));
    expect(textsTo(w)).toEqual(["echo: two"]);
    proxy.restore();
    await eventually(async () => finished(await inboxStatus(database, id)));

    const next = await followUp(w);
    expect(textsTo(w)).toEqual(["echo: two", FOLLOW_UP]);
    await expectSettled(database, [id, next]);
    expectAlive();
  });

  it("answers once a turn whose database went away during the model call", async () => {
    // A short lease, so an update whose state could not be saved is claimed again quickly.
    const { w, proxy, database, expectAlive } = await worldBehindProxy({
      INBOX_LEASE_SECONDS: "2",
    });
    const openGate = holdNextModelCall(w);
    const id = await w.say("two");
    await eventually(() => w.gemini.requests.length === 1);

    proxy.cut();
    openGate();
    // Back only once the service has met the outage while finishing this update.
    await eventually(
      () =>
        w.service.proc.exitCode !== null ||
        w.service.logs.some(
          (l) => l.update_id === id && Number(l.level) >= 40 && !/lease/.test(String(l.msg)),
        ),
    );
    expectAlive();
    proxy.restore();
    await eventually(async () => finished(await inboxStatus(database, id)));

    const next = await followUp(w);
    expect(textsTo(w)).toEqual(["echo: two", FOLLOW_UP]);
    await expectSettled(database, [id, next]);
  });
});
