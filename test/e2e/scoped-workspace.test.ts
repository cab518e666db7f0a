import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import type { FunctionResponse } from "@google/genai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CallSpec, calls, type RecordedRequest, text } from "../fakes/gemini.js";
import {
  ALLOWED_USER,
  eventually,
  privateMessageUpdate,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

/**
 * Each recall scope has a workspace of its own, through the real service: a document a user sent
 * in their private chat is theirs, in every topic of that chat, and no group and no other user can
 * list, read or be sent it (issue 36, item 13).
 */

const BOT = "koroku_test_bot";
const ALICE = ALLOWED_USER + 1;
const BOB = ALLOWED_USER + 2;
const GROUP = -100_888_000;
const SECRET = "ALICE'S SALARY: 123,456";

const functionResponses = (r: RecordedRequest | undefined): FunctionResponse[] =>
  (r?.body.contents.at(-1)?.parts ?? []).flatMap((p) =>
    p.functionResponse ? [p.functionResponse] : [],
  );

describe("a workspace per recall scope, end to end", () => {
  let w: ServiceWorld;
  const workspace = () => w.env.WORKSPACE_DIR as string;
  const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
  const waitForText = (chatId: number, words: string) =>
    eventually(() => sentTo(chatId).find((m) => m.plain_text === words));

  /** Runs one turn whose model makes `specs`' calls and then says `done`; returns the responses. */
  async function toolTurn(
    specs: CallSpec[],
    words: string,
    options: { chatId: number; userId: number; threadId?: number },
  ): Promise<FunctionResponse[]> {
    const before = w.gemini.requests.length;
    const done = `done: ${words}`;
    w.gemini.script(calls(specs), text(done));
    await w.say(words, options);
    await waitForText(options.chatId, done);
    return functionResponses(w.gemini.requests[before + 1]);
  }

  beforeAll(async () => {
    w = await startWorld({
      env: {
        ALLOWED_USER_IDS: [ALICE, BOB].join(","),
        ENABLE_SHELL_TOOL: "true",
        ...allowBuiltinTools(),
      },
      telegram: { topicsInPrivateChats: true },
    });
    // Alice sends a document in her private chat: the intake saves it in her scope's inbox/.
    w.gemini.script(text("Got your document."));
    const file = w.telegram.addFile(Buffer.from(`${SECRET}\n`));
    const document = { ...file, file_name: "salary.txt", mime_type: "text/plain" };
    const update = privateMessageUpdate(w, ALICE, { document }, "Alice");
    expect((await w.post(update)).status).toBe(200);
    await waitForText(ALICE, "Got your document.");
  });

  afterEach(() => {
    expect(w.service.proc.exitCode).toBeNull();
    expect(w.gemini.rejections).toEqual([]);
  });

  afterAll(async () => {
    await w?.close();
  });

  it("saves the document in the sender's own folder", () => {
    const saved = join(workspace(), `private-${ALICE}`, "inbox", "salary.txt");
    expect(readFileSync(saved, "utf8")).toBe(`${SECRET}\n`);
  });

  it("a group cannot list, read or be sent a private document, however it asks", async () => {
    // A symlink planted in the group's folder (by whoever could) leads into Alice's: refused too.
    const groupDir = join(workspace(), `group${GROUP}`);
    mkdirSync(groupDir, { recursive: true });
    symlinkSync(join(workspace(), `private-${ALICE}`), join(groupDir, "alice"));
    const responses = await toolTurn(
      [
        { name: "list_files", args: {} },
        { name: "list_files", args: { path: "inbox" } },
        { name: "read_file", args: { path: "inbox/salary.txt" } },
        { name: "send_file", args: { path: "inbox/salary.txt" } },
        { name: "list_files", args: { path: `../private-${ALICE}/inbox` } },
        { name: "read_file", args: { path: `../private-${ALICE}/inbox/salary.txt` } },
        { name: "send_file", args: { path: `../private-${ALICE}/inbox/salary.txt` } },
        { name: "read_file", args: { path: "alice/inbox/salary.txt" } },
        { name: "send_file", args: { path: "alice/inbox/salary.txt" } },
        { name: "run_command", args: { command: "pwd; ls -A" } },
      ],
      `@${BOT} show me the files`,
      { chatId: GROUP, userId: BOB },
    );
    expect(responses).toHaveLength(10);
    expect(responses[0]?.response).toEqual({
      output: {
        path: ".",
        entries: [{ name: "alice", type: "symlink", size: null }],
        total: 1,
        truncated: false,
      },
    });
    const errors = responses.slice(1, 9).map((r) => String(r.response?.error));
    expect(errors.slice(0, 3)).toEqual([
      expect.stringMatching(/"inbox" does not exist/),
      expect.stringMatching(/does not exist/),
      expect.stringMatching(/does not exist/),
    ]);
    for (const error of errors.slice(3, 6)) expect(error).toMatch(/leaves the workspace/);
    for (const error of errors.slice(6)) expect(error).toMatch(/symlink that points outside/);
    // The shell starts in the group's folder, where the document is not.
    const shell = responses[9]?.response?.output as { stdout: string };
    expect(shell.stdout).toBe(`${groupDir}\nalice\n`);
    expect(JSON.stringify(w.gemini.requests.at(-2))).not.toContain("SALARY");
    expect(w.telegram.sentFiles.filter((f) => f.chat_id === GROUP)).toEqual([]);
  });

  it("another user's private chat does not see it either", async () => {
    const responses = await toolTurn(
      [
        { name: "read_file", args: { path: "inbox/salary.txt" } },
        { name: "send_file", args: { path: `../private-${ALICE}/inbox/salary.txt` } },
      ],
      "anything for me?",
      { chatId: BOB, userId: BOB },
    );
    expect(String(responses[0]?.response?.error)).toMatch(/does not exist/);
    expect(String(responses[1]?.response?.error)).toMatch(/leaves the workspace/);
    expect(w.telegram.sentFiles.filter((f) => f.chat_id === BOB)).toEqual([]);
  });

  it("every topic of the sender's private chat shares her workspace", async () => {
    const written = await toolTurn(
      [{ name: "write_file", args: { path: "notes/plan.md", content: "from topic 7" } }],
      "note this",
      { chatId: ALICE, userId: ALICE, threadId: 7 },
    );
    expect(written[0]?.response).toEqual({ output: { path: "notes/plan.md", bytes: 12 } });
    const read = await toolTurn(
      [
        { name: "read_file", args: { path: "inbox/salary.txt" } },
        { name: "read_file", args: { path: "notes/plan.md" } },
        { name: "send_file", args: { path: "inbox/salary.txt" } },
      ],
      "what do I have?",
      { chatId: ALICE, userId: ALICE, threadId: 9 },
    );
    expect(read.map((r) => (r.response?.output as { content?: string })?.content)).toEqual([
      `${SECRET}\n`,
      "from topic 7",
      undefined,
    ]);
    expect(read[2]?.response).toMatchObject({ output: { sent: "document" } });
    const sent = w.telegram.sentFiles.filter((f) => f.chat_id === ALICE);
    expect(sent.map((f) => [f.file_name, f.message_thread_id])).toEqual([["salary.txt", 9]]);
  });
});
