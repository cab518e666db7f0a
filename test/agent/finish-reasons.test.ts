import { beforeEach, describe, expect, it } from "vitest";
import { CUT_NOTE, MALFORMED_TWICE } from "../../src/agent/finish-reasons.js";
import { GeminiRefusedError } from "../../src/agent/gemini-errors.js";
import {
  blockedPrompt,
  call,
  combine,
  content,
  empty,
  type RecordedRequest,
  type ReplyStep,
  status,
  text,
  thought,
} from "../fakes/gemini.js";
import { type Harness, harnessPerTest } from "../helpers/harness.js";
import { STAMP } from "../helpers/stamps.js";

const sent = (r: RecordedRequest | undefined) => JSON.stringify(r?.body.contents);
const cut = (step: ReplyStep): ReplyStep => ({ ...step, finishReason: "MAX_TOKENS" });

describe("finish reasons and odd answers", () => {
  // Every test ends with the fake having refused nothing: in particular no request carried two
  // user turns in a row, a turn ending on the model's side, or a call without a name.
  const harness = harnessPerTest();
  let h: Harness;
  beforeEach(() => {
    h = harness();
  });
  const roles = async () =>
    (await h.app.store.loadContext("c1")).events.map((e) => e.event.role).join(" ");

  it("gives what was written of an answer cut at MAX_TOKENS, with a note, and stores only Gemini's words", async () => {
    h.fake.script(cut(text("The first half")), text("next"));
    const result = await h.app.agent.runTurn("c1", { text: "long essay" });
    expect(result.text).toBe(`The first half\n\n${CUT_NOTE}`);
    await h.app.agent.runTurn("c1", { text: "go on" });
    expect(sent(h.fake.requests[1])).toContain("The first half");
    expect(sent(h.fake.requests[1])).not.toContain("cut off");
  });

  it("says the model ran out of room when a thought hit MAX_TOKENS before any answer", async () => {
    h.fake.script(cut(thought("so much to consider")), text("short answer"));
    const result = await h.app.agent.runTurn("c1", { text: "hard question" });
    expect(result.text).toMatch(/ran out of room while thinking/);
    expect(result.text).not.toMatch(/\(no answer/);
    expect(await roles()).toBe("user");
    expect((await h.app.agent.runTurn("c1", { text: "briefly?" })).text).toBe("short answer");
    // Both questions go as one user turn.
    const contents = h.fake.requests[1]?.body.contents ?? [];
    expect(contents).toHaveLength(1);
    expect(contents[0]?.parts?.map((p) => p.text)).toEqual([
      expect.stringMatching(STAMP),
      "hard question",
      expect.stringMatching(STAMP),
      "briefly?",
    ]);
  });

  it.each([
    ["MALFORMED_FUNCTION_CALL", empty("MALFORMED_FUNCTION_CALL")],
    ["a call without a name", content({ role: "model", parts: [{ functionCall: { args: {} } }] })],
  ])("asks again once after %s, never running or storing it", async (_, bad) => {
    h.fake.script(bad, call("get_current_time"), text("It is noon."));
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    const result = await h.app.agent.runTurn("c1", { text: "time?" });
    expect(result).toMatchObject({ text: "It is noon.", modelCalls: 3, toolCalls: 1 });
    expect(executed).toBe(1);
    expect(await roles()).toBe("user model user model");
    expect(h.fake.requests[1]?.body.contents).toEqual(h.fake.requests[0]?.body.contents);
  });

  it("tells the user after a second malformed call, and the chat goes on", async () => {
    const nameless = content({ role: "model", parts: [{ functionCall: { args: { x: 1 } } }] });
    h.fake.script(nameless, empty("MALFORMED_FUNCTION_CALL"), text("fine now"));
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    const result = await h.app.agent.runTurn("c1", { text: "do it" });
    expect(result).toMatchObject({ text: MALFORMED_TWICE, modelCalls: 2, toolCalls: 0 });
    expect(executed).toBe(0);
    const stored = JSON.stringify((await h.app.store.loadContext("c1")).events);
    expect(stored).not.toContain("function_call");
    expect((await h.app.agent.runTurn("c1", { text: "again" })).text).toBe("fine now");
    expect(sent(h.fake.requests[2])).not.toContain("functionCall");
  });

  it.each([
    ["SAFETY", empty("SAFETY"), /safety reasons \(SAFETY\)/],
    [
      "RECITATION",
      combine(text("Once upon a"), empty("RECITATION")),
      /source too closely \(RECITATION\)/,
    ],
    ["a blocked prompt", blockedPrompt("PROHIBITED_CONTENT"), /was blocked \(PROHIBITED_CONTENT\)/],
    ["an empty answer", empty("STOP"), /empty answer/],
  ])("tells the user about %s and stores no words Gemini did not say", async (_, step, message) => {
    h.fake.script(step, text("fine now"));
    expect((await h.app.agent.runTurn("c1", { text: "hi" })).text).toMatch(message);
    expect(await roles()).toBe("user");
    expect((await h.app.agent.runTurn("c1", { text: "again" })).text).toBe("fine now");
    expect(sent(h.fake.requests[1])).not.toMatch(/no answer|Once upon/);
  });

  it("keeps the history valid when a refusal comes after tool calls", async () => {
    h.fake.script(call("get_current_time"), empty("SAFETY"), text("fine now"));
    await h.app.agent.runTurn("c1", { text: "time?" });
    expect(await roles()).toBe("user model user");
    expect((await h.app.agent.runTurn("c1", { text: "and now?" })).text).toBe("fine now");
    const last = h.fake.requests.at(-1)?.body.contents ?? [];
    expect(last.map((c) => c.role)).toEqual(["user", "model", "user"]);
    expect(last[2]?.parts?.map((p) => Object.keys(p)[0])).toEqual([
      "functionResponse",
      "text",
      "text",
    ]);
    expect(last[2]?.parts?.[1]?.text).toMatch(STAMP);
  });

  it("never sends two user turns in a row after a failed model call", async () => {
    h.fake.script(status(400, "Request contains an invalid argument."), text("fine now"));
    await expect(h.app.agent.runTurn("c1", { text: "one" })).rejects.toBeInstanceOf(
      GeminiRefusedError,
    );
    expect((await h.app.agent.runTurn("c1", { text: "two" })).text).toBe("fine now");
    expect(h.fake.requests[1]?.body.contents?.map((c) => c.role)).toEqual(["user"]);
  });

  it("answers with the first of several candidates", async () => {
    h.fake.script({ ...text("first"), otherCandidates: [[{ text: "second" }]] });
    expect((await h.app.agent.runTurn("c1", { text: "hi" })).text).toBe("first");
  });
});
