import { type Dirent, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { call, hang, streamed, text } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

const GROUP = -4_000_101;
const ASKER = ALLOWED_USER;
const MEMBER = 515_151;
const ADMIN = 616_161;
const NOT_YOURS = "Only the person who asked, or an admin of this group, can stop this answer.";
const ANSWER = Array.from({ length: 30 }, (_, i) => `Sentence number ${i + 1} of the answer.`).join(
  " ",
);
/** An answer in 40-odd chunks over about 6 s: long enough to try to stop it twice. */
const slowly = () => streamed(text(ANSWER), { chunkChars: 30, chunkDelayMs: 150 });

const sentTo = (w: ServiceWorld, chatId: number) =>
  w.telegram.sent.filter((m) => m.chat_id === chatId).map((m) => m.plain_text);

/** The file `name` anywhere under `dir`, when it exists and has content. */
function findFile(dir: string, name: string): string | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = findFile(path, name);
      if (found) return found;
    } else if (entry.name === name && readFileSync(path, "utf8").trim() !== "") return path;
  }
  return undefined;
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  const stat = (() => {
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return "";
    }
  })();
  return stat === "" || stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
}

describe.each(DATABASE_KINDS)("stopping an answer on %s", (kind) => {
  let w: ServiceWorld;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("/stop kills a command that is running, and the answer ends at once", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env: { ENABLE_SHELL_TOOL: "true", ...allowBuiltinTools() } });
    w.gemini.script(call("run_command", { command: "echo $$ > sleeper.pid; exec sleep 15" }));
    await w.say("run the slow thing");
    const pidFile = await eventually(() => findFile(w.env.WORKSPACE_DIR as string, "sleeper.pid"));
    const pid = Number(readFileSync(pidFile, "utf8"));
    const stoppedAt = Date.now();
    await w.say("/stop");
    await eventually(() => sentTo(w, ALLOWED_USER).includes("(stopped)"), 10_000);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    await eventually(() => processGone(pid), 5_000);

    w.gemini.script(text("continuing"));
    await w.say("go on");
    await eventually(() => sentTo(w, ALLOWED_USER).includes("continuing"));
    // The model learns the command was killed, not that it finished.
    const history = JSON.stringify(w.gemini.requests.at(-1)?.body.contents);
    expect(history).toContain("killed: the user stopped the answer while the command ran");
  });

  it("/stop ends a compaction's summary call, and nothing is summarised", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env: { COMPACTION_MAX_EVENTS: "4" } });
    for (const words of ["one", "two"]) {
      w.gemini.script(text(`answer ${words}`));
      await w.say(words);
      await eventually(() => sentTo(w, ALLOWED_USER).includes(`answer ${words}`));
    }
    w.gemini.scriptFor("summary-model", hang());
    await w.say("three");
    await eventually(() => w.gemini.requests.some((r) => r.model === "summary-model"));
    const stoppedAt = Date.now();
    await w.say("/stop");
    await eventually(() => sentTo(w, ALLOWED_USER).includes("(stopped)"), 10_000);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(sentTo(w, ALLOWED_USER).some((t) => t.startsWith("🧠 Compacted"))).toBe(false);
    // No call for the answer after the summary was cut off.
    expect(w.gemini.requests.filter((r) => r.model === "chat-model")).toHaveLength(2);
  });

  it("in a group, only the one who asked or an admin stops an answer", {
    timeout: 90_000,
  }, async () => {
    w = await startWorld({
      kind,
      env: { ALLOWED_USER_IDS: `${ASKER},${MEMBER},${ADMIN}`, STREAMING: "edit" },
    });
    w.telegram.setMemberStatus(GROUP, ADMIN, "administrator");
    w.telegram.setMemberStatus(GROUP, MEMBER, "member");
    const mention = `@${w.telegram.bot.username}`;
    const inGroup = (userId: number) => ({ chatId: GROUP, userId });
    const memberChecks = () => w.telegram.calls.filter((c) => c.method === "getChatMember");
    /**
     * Asks for a long answer, has `stopper` say /stop once it shows, and returns the answer as it
     * ended (the conversation runs in order: once a next message is answered, it has).
     */
    async function askAndStop(stopper: number): Promise<string> {
      const before = sentTo(w, GROUP).length;
      w.gemini.script(slowly());
      await w.say(`${mention} write a lot`, inGroup(ASKER));
      await eventually(() => sentTo(w, GROUP).length > before);
      await w.say("/stop", inGroup(stopper));
      w.gemini.script(text("noted"));
      await w.say(`${mention} thanks`, inGroup(ASKER));
      await eventually(() => sentTo(w, GROUP).at(-1) === "noted", 20_000);
      const sent = sentTo(w, GROUP);
      return sent[before] as string;
    }

    // Another member's /stop is refused, in words, after Telegram said they are no admin; the
    // answer goes on to its end.
    expect(await askAndStop(MEMBER)).toBe(ANSWER);
    expect(sentTo(w, GROUP)).toContain(NOT_YOURS);
    expect(memberChecks().map((c) => [c.body.chat_id, c.body.user_id])).toEqual([[GROUP, MEMBER]]);

    // An admin's stops it.
    const byAdmin = await askAndStop(ADMIN);
    expect(byAdmin.length).toBeLessThan(ANSWER.length);
    expect(ANSWER.startsWith(byAdmin.trim())).toBe(true);
    expect(memberChecks()).toHaveLength(2);

    // The one who asked stops their own, and Telegram is not asked who they are.
    const byAsker = await askAndStop(ASKER);
    expect(byAsker.length).toBeLessThan(ANSWER.length);
    expect(memberChecks()).toHaveLength(2);
    expect(sentTo(w, GROUP).filter((t) => t === NOT_YOURS)).toHaveLength(1);
  });
});
