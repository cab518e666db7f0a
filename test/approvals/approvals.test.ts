import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Approvals, createApprovals } from "../../src/approvals/approvals.js";
import { continuationOf } from "../../src/approvals/continuation.js";
import {
  type AskNow,
  NOBODY_TO_ASK,
  NOT_ANSWERED,
  POLICY_DENIED,
  SUPERSEDED,
  USER_DECLINED,
} from "../../src/approvals/gate.js";
import { createPolicies } from "../../src/approvals/policy.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { scopeOfKey } from "../../src/scope/recall-scope.js";
import type { FunctionCallPart } from "../../src/session/events.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

const call = (name: string, args: Record<string, unknown> = {}): FunctionCallPart => ({
  kind: "function_call",
  name,
  args,
});

describe("createPolicies", () => {
  const policyOf = createPolicies({
    servers: [
      {
        name: "cal",
        transport: { kind: "http", url: "http://x", headers: {} },
        policy: "allow",
        tools: { delete_event: "ask" },
        timeoutMs: 1,
        maxOutputChars: 100,
      },
      {
        name: "notes",
        transport: { kind: "stdio", command: "x", args: [], env: {} },
        tools: { wipe: "deny" },
        timeoutMs: 1,
        maxOutputChars: 100,
      },
    ],
    policies: { write_file: "allow", cal__list: "deny" },
  });

  it("asks for MCP tools, run_command and write_file by default, and allows the rest", () => {
    expect(policyOf("notes__read")).toBe("ask");
    expect(createPolicies({ servers: [], policies: {} })("write_file")).toBe("ask");
    expect(policyOf("run_command")).toBe("ask");
    expect(policyOf("read_file")).toBe("allow");
    expect(policyOf("search_history")).toBe("allow");
  });

  it("reads a tool named like an object's own members by its server's policy", () => {
    for (const name of ["valueOf", "toString", "constructor", "hasOwnProperty", "__proto__"]) {
      expect(policyOf(`cal__${name}`)).toBe("allow");
      expect(policyOf(`notes__${name}`)).toBe("ask");
      expect(policyOf(name)).toBe("allow");
    }
  });

  it("takes a full name first, then the server's tool, then the server's default", () => {
    expect(policyOf("write_file")).toBe("allow");
    expect(policyOf("cal__list")).toBe("deny");
    expect(policyOf("cal__delete_event")).toBe("ask");
    expect(policyOf("cal__create_event")).toBe("allow");
    expect(policyOf("notes__wipe")).toBe("deny");
  });
});

describe.each(DATABASE_KINDS)("approvals on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let approvals: Approvals;
  let clock = 1_000_000;
  const CHAT = "555";
  const scope = scopeOfKey(CHAT);

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, captureLogger().logger);
    approvals = createApprovals({
      db: handle.db,
      policyOf: createPolicies({ servers: [], policies: { forbidden: "deny" } }),
      timeoutMs: 60_000,
      logger: captureLogger().logger,
      now: () => clock,
    });
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  const check = (eventId: number, calls: FunctionCallPart[], conversation = CHAT) =>
    approvals.gate.check({
      conversation,
      scope,
      eventId,
      calls: calls.map((c, index) => ({ index, call: c })),
      askedBy: 555,
    });
  const inbox = () => handle.db.selectFrom("inbox").select(["update_id", "update_json"]).execute();

  it("runs allowed calls, refuses denied ones, and waits for the ones to ask about", async () => {
    const first = await check(1, [
      call("read_file"),
      call("forbidden"),
      call("write_file", { path: "a" }),
    ]);
    expect(first.kind).toBe("waiting");
    if (first.kind !== "waiting") return;
    expect(first.pending).toEqual([
      expect.objectContaining({
        tool: "write_file",
        args: { path: "a" },
        callIndex: 2,
        askedBy: 555,
        chatId: 555,
      }),
    ]);
    // Checking again (a run after a restart) asks nothing twice.
    const again = await check(1, [
      call("read_file"),
      call("forbidden"),
      call("write_file", { path: "a" }),
    ]);
    expect(again.kind === "waiting" && again.pending.map((a) => a.id)).toEqual([
      first.pending[0]?.id,
    ]);

    const answered = await approvals.answer(first.pending[0]?.id as number, "allowed", 555);
    expect(answered?.status).toBe("allowed");
    expect(await approvals.answer(first.pending[0]?.id as number, "denied", 555)).toBeUndefined();
    const decided = await check(1, [
      call("read_file"),
      call("forbidden"),
      call("write_file", { path: "a" }),
    ]);
    expect(decided.kind === "decided" && decided.decisions).toEqual([
      { kind: "run" },
      { kind: "refuse", error: POLICY_DENIED },
      { kind: "run" },
    ]);
    // The answer queued the turn's continuation, once.
    const queued = (await inbox()).map((r) => continuationOf(JSON.parse(r.update_json)));
    expect(queued).toEqual([
      {
        update_id: expect.any(Number),
        approval_continuation: { approval_id: answered?.id, conversation: CHAT },
      },
    ]);
  });

  it("a denial answers the model; Always allow grants the scope until revoked", async () => {
    const denied = await check(2, [call("write_file")]);
    if (denied.kind !== "waiting") throw new Error("expected a wait");
    await approvals.answer(denied.pending[0]?.id as number, "denied", 555);
    expect(await check(2, [call("write_file")])).toMatchObject({
      kind: "decided",
      decisions: [{ kind: "refuse", error: USER_DECLINED }],
    });

    const asked = await check(3, [call("run_command")]);
    if (asked.kind !== "waiting") throw new Error("expected a wait");
    await approvals.answer(asked.pending[0]?.id as number, "always", 555);
    expect(await check(4, [call("run_command")])).toMatchObject({
      kind: "decided",
      decisions: [{ kind: "run" }],
    });
    const [grant] = await approvals.store.grants("private-555");
    expect(grant).toMatchObject({ tool: "run_command", grantedBy: 555 });
    expect(await approvals.store.revoke("private-555", grant?.id as number)).toBe(true);
    expect((await check(5, [call("run_command")])).kind).toBe("waiting");
  });

  it("expires unanswered requests as denials, and supersedes them for a new message", async () => {
    const before = (await inbox()).length;
    clock += 61_000;
    const expired = await approvals.expireDue(clock);
    expect(expired.map((a) => a.eventId)).toEqual([5]);
    expect((await inbox()).length).toBe(before + 1);
    expect(await check(5, [call("run_command")])).toMatchObject({
      decisions: [{ kind: "refuse", error: NOT_ANSWERED }],
    });

    await check(6, [call("write_file")]);
    await approvals.gate.supersede(CHAT);
    expect(await check(6, [call("write_file")])).toMatchObject({
      decisions: [{ kind: "refuse", error: SUPERSEDED }],
    });
  });

  it("a stop cancels the waiting calls and queues the turn to end as stopped", async () => {
    await check(7, [call("write_file")]);
    const cancelled = await approvals.cancel(CHAT);
    expect(cancelled.map((a) => a.eventId)).toEqual([7]);
    expect(await check(7, [call("write_file")])).toMatchObject({ decisions: [{ kind: "stop" }] });
  });

  it("in the terminal, asks at once: an always grants the terminal's scope, a stop asks no more", async () => {
    const asked: string[] = [];
    const answers = ["denied", "always"] as const;
    const terminalCheck = (eventId: number, names: string[], ask?: AskNow) =>
      approvals.gate.check({
        conversation: "terminal",
        scope: { kind: "terminal" },
        eventId,
        calls: names.map((name, index) => ({ index, call: call(name) })),
        askedBy: undefined,
        ask,
      });
    const ask: AskNow = async (c) => {
      asked.push(c.name);
      return answers[asked.length - 1] ?? "stop";
    };
    expect(
      await terminalCheck(8, ["write_file", "forbidden", "run_command", "read_file"], ask),
    ).toMatchObject({
      decisions: [
        { kind: "refuse", error: USER_DECLINED },
        { kind: "refuse", error: POLICY_DENIED },
        { kind: "run" },
        { kind: "run" },
      ],
    });
    expect(asked).toEqual(["write_file", "run_command"]);
    expect(await approvals.store.grants("terminal")).toEqual([
      expect.objectContaining({ tool: "run_command", grantedBy: undefined }),
    ]);
    // Granted: not asked again. A stop ends the asking: the calls after it are not asked about.
    expect(await terminalCheck(9, ["run_command", "write_file", "write_file"], ask)).toMatchObject({
      decisions: [{ kind: "run" }, { kind: "stop" }, { kind: "stop" }],
    });
    expect(asked).toEqual(["write_file", "run_command", "write_file"]);
    // Nobody to ask (code running a turn for itself): asking tools do not run, unless granted.
    expect(await terminalCheck(10, ["write_file", "forbidden", "run_command"])).toMatchObject({
      decisions: [
        { kind: "refuse", error: NOBODY_TO_ASK },
        { kind: "refuse", error: POLICY_DENIED },
        { kind: "run" },
      ],
    });
    expect(await inbox()).not.toContainEqual(
      expect.objectContaining({ update_json: expect.stringContaining('"terminal"') }),
    );
  });
});
