import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { streamed, text } from "../test/fakes/gemini.js";
import { buildTextUpdate } from "../test/fakes/telegram-objects.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { type Fakes, startFakes } from "./fakes.js";
import type { BenchRow } from "./run.js";
import {
  cpuTime,
  profileArgs,
  START_COMMAND,
  serviceEnv,
  startService,
  WEBHOOK_SECRET,
} from "./service-process.js";
import { round, summarize } from "./stats.js";

const BENCHMARK = "streaming";
const CHATS = Number(process.env.BENCH_STREAMING_CHATS ?? 50);
const FIRST_USER_ID = 2_000_001;
const CHUNKS = 40;
const STREAM_MS = 4_000;
const TARGETS = { firstTextP50Ms: 500, finalAfterLastChunkMs: 300 } as const;
const WAIT_MS = 60_000;
const WARM_UP_USER = FIRST_USER_ID - 1;

/** 2,000 characters of what Gemini writes: paragraphs, bold, a list and inline code. */
function answer(): string {
  const paragraph = (i: number) =>
    `Paragraph ${i}: the **answer** keeps growing while the model writes, with \`code ${i}\` in it.`;
  const lines: string[] = [];
  for (let i = 1; lines.join("\n").length < 1_900; i++) {
    lines.push(i % 4 === 0 ? `- item ${i} of a list` : paragraph(i), "");
  }
  return lines.join("\n").padEnd(2_000, ".").slice(0, 2_000);
}

const ANSWER = answer();
const STEP = streamed(text(ANSWER), {
  chunkChars: ANSWER.length / CHUNKS,
  chunkDelayMs: STREAM_MS / (CHUNKS - 1),
});

async function post(baseUrl: string, userId: number, updateId: number): Promise<number> {
  const update = buildTextUpdate({
    updateId,
    messageId: updateId,
    text: `stream ${userId}`,
    userId,
  });
  const at = Date.now();
  const res = await fetch(`${baseUrl}/telegram/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-telegram-bot-api-secret-token": WEBHOOK_SECRET,
    },
    body: JSON.stringify(update),
  });
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  return at;
}

async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * One service with `streaming`: first a warm-up answer (the first turn of a process loads the
 * Gemini SDK and compiles the turn's code), then `users` chats at once.
 */
async function run(
  fakes: Fakes,
  streaming: string,
  users: number[],
  rich: boolean,
  cpuProfileDir?: string,
) {
  const dir = mkdtempSync(join(tmpdir(), "koroku-bench-streaming-"));
  const port = await freePort();
  const env = serviceEnv({
    fakes,
    database: { kind: "sqlite", path: join(dir, "agent.db") },
    port,
    allowedUserIds: [...users, WARM_UP_USER],
    dataDir: dir,
  });
  const name = `streaming-${streaming}-${rich ? "rich" : "html"}`;
  const service = await startService({
    env: { ...env, STREAMING: streaming, RICH_MESSAGES: String(rich) },
    fakes,
    nodeArgs: [...START_COMMAND.nodeArgs, ...profileArgs(cpuProfileDir, name)],
  });
  try {
    fakes.gemini.script(text("warm"));
    await post(service.baseUrl, WARM_UP_USER, users.length + 1);
    await until(() => fakes.telegram.sent.some((m) => m.chat_id === WARM_UP_USER), "the warm-up");
    fakes.telegram.forgetCalls();
    fakes.gemini.requests.length = 0;
    const sentBefore = fakes.telegram.sent.length;
    const posted = new Map<number, number>();
    const cpuBefore = cpuTime(service.pid);
    await Promise.all(
      users.map(async (user, i) => posted.set(user, await post(service.baseUrl, user, 1 + i))),
    );
    await until(() => fakes.telegram.sent.length - sentBefore >= users.length, "every answer");
    const cpuAfter = cpuTime(service.pid);
    const cpuMs = cpuAfter.userMs + cpuAfter.systemMs - (cpuBefore.userMs + cpuBefore.systemMs);
    return { posted, cpuMsPerAnswer: cpuMs / users.length };
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const DRAFTS = new Set(["sendMessageDraft", "sendRichMessageDraft"]);
const FINALS = new Set(["sendMessage", "sendRichMessage"]);

export async function streamingBenchmark(options: {
  progress: (line: string) => void;
  cpuProfileDir?: string;
}): Promise<BenchRow[]> {
  const fakes = await startFakes({ keepRecords: true });
  try {
    fakes.gemini.setDefault(STEP);
    const rows: BenchRow[] = [];
    // HTML messages (RICH_MESSAGES=false), then the default: rich drafts and rich messages.
    for (const rich of [false, true]) rows.push(...(await measure(fakes, rich, options)));
    return rows;
  } finally {
    await fakes.close();
  }
}

async function measure(
  fakes: Fakes,
  rich: boolean,
  { progress, cpuProfileDir }: { progress: (line: string) => void; cpuProfileDir?: string },
): Promise<BenchRow[]> {
  const format = rich ? "rich messages" : "HTML messages";
  progress(`${BENCHMARK}: one answer not streamed (STREAMING=off), for its text (${format})`);
  const baselineUser = FIRST_USER_ID + CHATS;
  fakes.telegram.forgetCalls();
  await run(fakes, "off", [baselineUser], rich);
  const baseline = fakes.telegram.sent.find((m) => m.chat_id === baselineUser)?.plain_text;

  progress(`${BENCHMARK}: ${CHATS} private chats streaming at once (${format})`);
  const users = Array.from({ length: CHATS }, (_, i) => FIRST_USER_ID + i);
  const { posted, cpuMsPerAnswer } = await run(fakes, "auto", users, rich, cpuProfileDir);
  const calls = fakes.telegram.calls;
  const firstText: number[] = [];
  const finalAfterLastChunk: number[] = [];
  const callsPerAnswer: number[] = [];
  let identical = 0;
  const streams = fakes.gemini.requests.filter((r) => r.stream);
  for (const user of users) {
    const mine = calls.filter((c) => Number(c.body.chat_id) === user);
    const draft = mine.find(
      (c) => DRAFTS.has(c.method) && c.body.text !== "" && c.response?.ok === true,
    );
    const final = fakes.telegram.sent.find((m) => m.chat_id === user);
    const finalCall = mine.find((c) => FINALS.has(c.method));
    if (draft) firstText.push(draft.at - (posted.get(user) ?? 0));
    callsPerAnswer.push(mine.length);
    if (final?.plain_text === baseline) identical++;
    const stream = streams.find((r) => JSON.stringify(r.body.contents).includes(`stream ${user}`));
    if (finalCall && stream?.streamEndedAt !== undefined) {
      finalAfterLastChunk.push(finalCall.at - stream.streamEndedAt);
    }
  }
  const tooMany = calls.filter((c) => c.response?.ok === false && c.response.error_code === 429);
  const first = summarize(firstText);
  const after = summarize(finalAfterLastChunk);
  const perAnswer = summarize(callsPerAnswer);
  const row = (metric: string, value: number, unit: string, extra: Partial<BenchRow> = {}) => ({
    benchmark: BENCHMARK,
    database: "sqlite" as const,
    case: `${CHATS} chats, ${ANSWER.length} chars in ${CHUNKS} chunks over ${STREAM_MS / 1000} s, ${format}`,
    metric,
    value,
    unit,
    ...extra,
  });
  return [
    row("webhook POST → first visible text p50", round(first.p50, 0), "ms", {
      target: `< ${TARGETS.firstTextP50Ms} ms`,
      ok: firstText.length === CHATS && first.p50 < TARGETS.firstTextP50Ms,
      note: `p99 ${round(first.p99, 0)} ms; ${firstText.length}/${CHATS} chats saw a draft`,
    }),
    row("last chunk → final message, worst", round(after.max, 0), "ms", {
      target: `≤ ${TARGETS.finalAfterLastChunkMs} ms`,
      ok: finalAfterLastChunk.length === CHATS && after.max <= TARGETS.finalAfterLastChunkMs,
      note: `p50 ${round(after.p50, 0)} ms`,
    }),
    row("Telegram calls per answer", round(perAnswer.mean, 1), "calls", {
      note: `max ${perAnswer.max}: drafts, typing, the message`,
    }),
    row("service CPU per answer", round(cpuMsPerAnswer, 0), "ms", {
      note: "user and system time of the service process over the streaming phase, per chat",
    }),
    row("429 answers from Telegram", tooMany.length, "calls", {
      target: "0",
      ok: tooMany.length === 0,
      note: "the fake allows 5 drafts per second per chat",
    }),
    row("final text identical to the non-streamed answer", identical, "chats", {
      target: `${CHATS}`,
      ok: identical === CHATS,
    }),
  ];
}
