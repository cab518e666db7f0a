import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { fillDiskForInbox } from "../helpers/disk-full.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { freePort } from "../helpers/spawn-service.js";
import { wordsOf } from "../helpers/stamps.js";

const echo = (r: RecordedRequest) => text(`echo: ${wordsOf(r.body.contents.at(-1)?.parts)}`);

type Answer = { status: number; body: unknown };

async function health(baseUrl: string): Promise<Answer> {
  const res = await fetch(`${baseUrl}/healthz`);
  return { status: res.status, body: await res.json() };
}

/**
 * One connection that asks /healthz twice, pipelined: the second request is begun at once and
 * ended by `finish`. A connection in the middle of a request stays open when the service stops
 * listening, as a load balancer's kept-alive one does. Once the first answer is back, the server
 * has read the start of the second: they came in one write.
 */
function healthzTwiceOnOneConnection(baseUrl: string): {
  first: Promise<Answer>;
  finish(): Promise<Answer>;
} {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  socket.setEncoding("utf8");
  let received = "";
  const answers: Answer[] = [];
  const waiting: ((answer: Answer) => void)[] = [];
  socket.on("data", (chunk: string) => {
    received += chunk;
    for (;;) {
      const headEnd = received.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(received.slice(0, headEnd))?.[1];
      if (headEnd < 0 || length === undefined) return;
      const bodyEnd = headEnd + 4 + Number(length);
      if (received.length < bodyEnd) return;
      const answer = {
        status: Number(received.split(" ")[1]),
        body: JSON.parse(received.slice(headEnd + 4, bodyEnd)) as unknown,
      };
      received = received.slice(bodyEnd);
      const waiter = waiting.shift();
      if (waiter) waiter(answer);
      else answers.push(answer);
    }
  });
  const next = () =>
    new Promise<Answer>((resolve, reject) => {
      const ready = answers.shift();
      if (ready) resolve(ready);
      else waiting.push(resolve);
      socket.once("error", reject);
    });
  const request = `GET /healthz HTTP/1.1\r\nhost: ${hostname}\r\n`;
  socket.write(`${request}\r\n${request}`);
  return {
    first: next(),
    finish() {
      socket.end("connection: close\r\n\r\n");
      return next();
    },
  };
}

// The tests of one database run in order: the second stops the world's service, the third
// starts another.
describe.each(DATABASE_KINDS)("/healthz says 200 only while updates are taken, on %s", (kind) => {
  let w: ServiceWorld;
  let handle: DatabaseHandle;
  const answered = (words: string) =>
    eventually(() =>
      w.telegram.sent.find((m) => m.chat_id === ALLOWED_USER && m.plain_text === `echo: ${words}`),
    );

  beforeAll(async () => {
    w = await startWorld({ kind });
    w.gemini.setDefault(echo);
    handle = openDatabase(w.db.target, { poolSize: 1 });
  });
  afterAll(async () => {
    await handle?.close();
    await w?.close();
  });

  it("503 while the database cannot store an update (a full disk), 200 once it can again", async () => {
    expect(await health(w.service.baseUrl)).toEqual({ status: 200, body: { status: "ok" } });
    const undo = await fillDiskForInbox(handle.db, kind);
    let full = true;
    onTestFinished(async () => {
      if (full) await undo();
    });
    // The probe's outcome stands for a second.
    const unhealthy = await eventually(async () => {
      const answer = await health(w.service.baseUrl);
      return answer.status === 503 && answer;
    }, 10_000);
    expect(unhealthy.body).toEqual({ status: "database cannot store updates" });
    // What a balancer would still send here is refused, for Telegram to send again later.
    const refused = buildTextUpdate({
      updateId: w.nextUpdateId(),
      messageId: 1,
      text: "while the disk is full",
      userId: ALLOWED_USER,
    });
    expect((await w.post(refused)).status).toBe(500);
    await undo();
    full = false;
    await eventually(async () => (await health(w.service.baseUrl)).status === 200, 10_000);
    await w.say("once the disk has room");
    await answered("once the disk has room");
    // The lines come through the service's stdout, which may be read after the answer.
    const said = (msg: string) => w.service.logs.some((line) => line.msg === msg);
    await eventually(() =>
      said("the database cannot store updates: /healthz answers 503 until it can"),
    );
    await eventually(() => said("the database stores updates again: /healthz answers 200"));
  });

  it("503 while stopping, to a connection that was already open", async () => {
    const held = w.telegram.holdNext("sendMessage");
    onTestFinished(() => held.release());
    await w.say("an answer that is still being sent");
    await held.arrived;
    const connection = healthzTwiceOnOneConnection(w.service.baseUrl);
    expect(await connection.first).toEqual({ status: 200, body: { status: "ok" } });
    w.service.proc.kill("SIGTERM");
    await eventually(() =>
      w.service.logs.some(
        (line) => line.msg === "shutting down: no new updates, waiting for running turns",
      ),
    );
    expect(await connection.finish()).toEqual({ status: 503, body: { status: "stopping" } });
    held.release();
    expect(await w.service.exited).toBe(0);
  });

  it("503 while starting; an update posted the moment it says 200 is stored and answered", async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    // Start-up waits on Telegram here, long after the port opened.
    const getMe = w.telegram.holdNext("getMe");
    const starting = w.start({ PORT: String(port) });
    onTestFinished(async () => {
      getMe.release();
      (await starting).proc.kill("SIGTERM");
    });
    await getMe.arrived;
    expect(await health(baseUrl)).toEqual({ status: 503, body: { status: "starting" } });
    getMe.release();
    await eventually(async () => (await health(baseUrl)).status === 200);
    const updateId = w.nextUpdateId();
    const update = buildTextUpdate({
      updateId,
      messageId: updateId,
      text: "the moment it was ready",
      userId: ALLOWED_USER,
    });
    const res = await w.post(update, { service: { baseUrl } });
    expect(res.status).toBe(200);
    await answered("the moment it was ready");
    // Its row is finished once the answer is recorded, a moment after Telegram has it.
    await eventually(async () => {
      const row = await handle.db
        .selectFrom("inbox")
        .select("status")
        .where("update_id", "=", updateId)
        .executeTakeFirst();
      return row?.status === "done";
    });
  });
});
