import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseKind } from "../src/db/connect.js";
import { OggOpusEncoder, TTS_SAMPLE_RATE } from "../src/voice/ogg-opus.js";
import { text } from "../test/fakes/gemini.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { createChatDriver } from "./chat-driver.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { type Fakes, startFakes, type TelegramArrival } from "./fakes.js";
import { envCount } from "./load.js";
import type { BenchRow } from "./run.js";
import { serviceEnv, startService, watchPeakRss } from "./service-process.js";
import { round, summarize } from "./stats.js";

const BENCHMARK = "voice";
const CHATS = envCount("BENCH_VOICE_CHATS", 10);
const ROUNDS = envCount("BENCH_VOICE_ROUNDS", 10);
const FIRST_USER_ID = 4_000_001;
/** Speech as Gemini makes it: about 15 characters a second. */
const SECONDS_PER_CHAR = 1 / 15;
/** An answer of about 20 s of speech, one part. */
const ANSWER = `${"Here is what I found about your question, in a few plain sentences. ".repeat(4)}That is all.`;
const VOICE_TIMEOUT_MS = 60_000;
const QUIET_MS = 10_000;
const SPEECH_SECONDS = 60;

const users = Array.from({ length: CHATS }, (_, i) => FIRST_USER_ID + i);

/** A minute of speech-like PCM: a gliding voice, loud and soft, with some noise (seeded). */
function speechLikePcm(seconds: number): Buffer {
  const samples = seconds * TTS_SAMPLE_RATE;
  const pcm = Buffer.alloc(samples * 2);
  let seed = 12_345;
  for (let i = 0; i < samples; i++) {
    const t = i / TTS_SAMPLE_RATE;
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    const noise = (seed / 0x7fffffff - 0.5) * 800;
    const voice =
      Math.sin(2 * Math.PI * (150 + 50 * Math.sin(t * 3)) * t) * (0.5 + 0.5 * Math.sin(t * 7));
    pcm.writeInt16LE(Math.round(8_000 * voice + noise), i * 2);
  }
  return pcm;
}

/** CPU of the encoder (libopus in WebAssembly and the Ogg writer) per second of speech, in ms. */
function encodingRows(): BenchRow[] {
  const pcm = speechLikePcm(SPEECH_SECONDS);
  // The first encoder compiles the WebAssembly module: measured apart.
  const coldStart = process.cpuUsage();
  new OggOpusEncoder().discard();
  const cold = process.cpuUsage(coldStart);
  const perSecond: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = process.cpuUsage();
    const encoder = new OggOpusEncoder();
    for (let at = 0; at < pcm.byteLength; at += 24_000)
      encoder.write(pcm.subarray(at, at + 24_000));
    encoder.finish();
    const used = process.cpuUsage(start);
    perSecond.push((used.user + used.system) / 1000 / SPEECH_SECONDS);
  }
  const base = {
    benchmark: BENCHMARK,
    database: "none" as const,
    case: `encode ${SPEECH_SECONDS} s of speech, 24 kHz mono to Ogg Opus 32 kbit/s`,
  };
  return [
    {
      ...base,
      metric: "encoding CPU per second of speech",
      value: round(summarize(perSecond).p50, 1),
      unit: "ms",
      note: `median of 5 runs (${perSecond.map((v) => round(v, 1)).join(", ")})`,
    },
    {
      ...base,
      metric: "first encoder of a process",
      value: round((cold.user + cold.system) / 1000, 1),
      unit: "ms",
      note: "compiles libopus's WebAssembly once",
    },
  ];
}

async function measure(
  fakes: Fakes,
  database: DatabaseKind,
  postgresUrl: string,
  progress: (line: string) => void,
): Promise<BenchRow[]> {
  const bench = await createBenchDatabase(database, postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-voice-"));
  const answers = new Map<number, number>();
  const waits: number[] = [];
  const voiceWaiters = new Map<number, (arrival: TelegramArrival) => void>();
  const stop = fakes.onArrival((arrival) => {
    if (arrival.chatId === undefined) return;
    const method = arrival.method.toLowerCase();
    if (method === "sendmessage") answers.set(arrival.chatId, arrival.at);
    if (method === "sendvoice") voiceWaiters.get(arrival.chatId)?.(arrival);
  });
  try {
    const env = {
      ...serviceEnv({
        fakes,
        database: bench.target,
        port: await freePort(),
        allowedUserIds: users,
        dataDir,
      }),
      VOICE_REPLIES: "always",
    };
    const service = await startService({ env, fakes });
    const driver = createChatDriver(fakes, service.baseUrl, { expectedAnswer: ANSWER });
    /** One voice turn of `user`: from its answer's message to its voice note, in ms. */
    const voiceTurn = async (user: number): Promise<number> => {
      const voice = new Promise<TelegramArrival>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no voice note for ${user}`)),
          VOICE_TIMEOUT_MS,
        );
        voiceWaiters.set(user, (arrival) => {
          clearTimeout(timer);
          voiceWaiters.delete(user);
          resolve(arrival);
        });
      });
      await driver.turn(user);
      const arrival = await voice;
      return arrival.at - (answers.get(user) ?? arrival.at);
    };
    try {
      const afterStart = service.rssMb();
      const cpuBefore = service.cpuTime();
      const mainBefore = service.mainThreadCpuTime();
      const watch = watchPeakRss(service, 100);
      // One chat at a time first: what a user waits for on a quiet service.
      const alone: number[] = [];
      for (let r = 0; r < ROUNDS; r++) alone.push(await voiceTurn(users[0] as number));
      for (let r = 0; r < ROUNDS; r++) {
        await Promise.all(users.map(async (user) => waits.push(await voiceTurn(user))));
      }
      const busy = service.rssMb();
      const cpu = service.cpuTime();
      const main = service.mainThreadCpuTime();
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
      const quiet = service.rssMb();
      const peak = watch.peak();
      watch.stop();
      const replies = CHATS * ROUNDS + ROUNDS;
      progress(`voice: ${database}, ${replies} voice replies, RSS ${round(quiet, 1)} MB`);
      const wait = summarize(waits);
      const quietWait = summarize(alone);
      const base = {
        benchmark: BENCHMARK,
        database,
        case: `${replies} voice replies of ~${Math.round(ANSWER.length * SECONDS_PER_CHAR)} s (one chat, then ${CHATS} at once), npm start`,
      };
      return [
        {
          ...base,
          metric: "answer's message → its voice note, one chat at a time, p50",
          value: round(quietWait.p50, 0),
          unit: "ms",
          note: `${ROUNDS} turns of one chat, before the others`,
        },
        {
          ...base,
          metric: "answer's message → its voice note, one chat at a time, max",
          value: round(Math.max(...alone), 0),
          unit: "ms",
        },
        {
          ...base,
          metric: "answer's message → its voice note, 10 chats at once, p50",
          value: round(wait.p50, 0),
          unit: "ms",
          note: "the fake TTS answers at once: this is Koroku's own time (the request, 20 s of PCM streamed in, encoding, the upload)",
        },
        {
          ...base,
          metric: "answer's message → its voice note, 10 chats at once, p99",
          value: round(wait.p99, 0),
          unit: "ms",
        },
        { ...base, metric: "RSS after start", value: round(afterStart, 1), unit: "MB" },
        {
          ...base,
          metric: "RSS after the voice replies",
          value: round(quiet, 1),
          unit: "MB",
          note: `${round(busy, 1)} MB as the last went out; this after ${QUIET_MS / 1000} s quiet`,
        },
        { ...base, metric: "RSS peak", value: round(peak, 1), unit: "MB" },
        {
          ...base,
          metric: "service CPU per voice reply",
          value: round(
            (cpu.userMs + cpu.systemMs - cpuBefore.userMs - cpuBefore.systemMs) / replies,
            1,
          ),
          unit: "ms",
          note: "the whole turn: answer, speech request, encoding, upload",
        },
        {
          ...base,
          metric: "service main-thread CPU per voice reply",
          value: round(
            (main.userMs + main.systemMs - mainBefore.userMs - mainBefore.systemMs) / replies,
            1,
          ),
          unit: "ms",
          note: "the event loop's share, which every other chat's work waits for",
        },
      ];
    } finally {
      driver.close();
      await service.stop();
    }
  } finally {
    stop();
    rmSync(dataDir, { recursive: true, force: true });
    await bench.dispose();
  }
}

/**
 * Voice replies: the encoder's CPU per second of speech in process, then the service run as
 * `npm start` runs it with VOICE_REPLIES=always through 100 replies of about 20 s of speech each
 * (the fake TTS model at Gemini's pace of speech, answering at once).
 */
export async function voiceBenchmark(options: DatabaseBenchOptions): Promise<BenchRow[]> {
  const progress = options.progress ?? (() => {});
  const rows = encodingRows();
  const fakes = await startFakes({ gemini: { speechSecondsPerChar: SECONDS_PER_CHAR } });
  fakes.gemini.setDefault(text(ANSWER));
  try {
    for (const database of options.databases)
      rows.push(...(await measure(fakes, database, options.postgresUrl, progress)));
    return rows;
  } finally {
    await fakes.close();
  }
}
