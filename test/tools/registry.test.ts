import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolRegistry, defineTool, type Tool } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";

const ctx = toolContext("42");

const echo = defineTool({
  name: "echo",
  description: "Echoes its arguments.",
  schema: z.object({
    text: z.string().min(1).describe("What to echo"),
    times: z.number().int().min(1).max(5).default(1),
    options: z.object({ loud: z.boolean() }).optional(),
  }),
  async run(args, toolCtx) {
    return { echoed: args.text.repeat(args.times), chatId: toolCtx.chatId, loud: args.options };
  },
});

const noArgs = defineTool({
  name: "ping",
  description: "Answers pong.",
  schema: z.object({}),
  async run() {
    return "pong";
  },
});

function toolReturning(output: () => unknown): Tool {
  return defineTool({
    name: "produce",
    description: "Returns a prepared value.",
    schema: z.object({}),
    async run() {
      return output();
    },
  });
}

describe("tool registry: execute", () => {
  const registry = createToolRegistry([echo, noArgs]);

  it("runs a tool with parsed arguments and the context", async () => {
    const outcome = await registry.execute("echo", { text: "ab", times: 2 }, ctx);
    expect(outcome).toEqual({
      ok: true,
      response: { output: { echoed: "abab", chatId: "42" } },
    });
  });

  it("applies schema defaults and accepts missing args for a tool without parameters", async () => {
    expect(await registry.execute("echo", { text: "x" }, ctx)).toMatchObject({
      ok: true,
      response: { output: { echoed: "x" } },
    });
    expect(await registry.execute("ping", undefined, ctx)).toEqual({
      ok: true,
      response: { output: "pong" },
    });
  });

  it("names the available tools when asked for an unknown one", async () => {
    expect(await registry.execute("nope", {}, ctx)).toEqual({
      ok: false,
      response: { error: 'unknown tool "nope"; available: echo, ping' },
    });
  });

  it.each([
    ["a wrong type", { text: 5 }, /text: .*expected string, received number/],
    ["a missing field", {}, /text: .*expected string, received undefined/],
    ["a number out of range", { text: "x", times: 9 }, /times: .*<=5/],
    [
      "a nested field",
      { text: "x", options: { loud: "yes" } },
      /options\.loud: .*expected boolean/,
    ],
    ["args that are not an object", "text", /arguments: .*expected object/],
  ])("turns %s into an error naming the field", async (_case, args, message) => {
    const outcome = await registry.execute("echo", args, ctx);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.response.error).toMatch(/^invalid arguments for echo: /);
    expect(outcome.response.error).toMatch(message);
  });

  it("turns a thrown error into { error } and never throws", async () => {
    const failing = defineTool({
      name: "fail",
      description: "Always fails.",
      schema: z.object({ mode: z.enum(["error", "string", "object"]) }),
      async run(args) {
        if (args.mode === "error") throw new Error("disk is full; free some space");
        if (args.mode === "string") throw "plain string";
        throw { odd: true };
      },
    });
    const failingRegistry = createToolRegistry([failing]);
    expect(await failingRegistry.execute("fail", { mode: "error" }, ctx)).toEqual({
      ok: false,
      response: { error: "disk is full; free some space" },
    });
    expect(await failingRegistry.execute("fail", { mode: "string" }, ctx)).toEqual({
      ok: false,
      response: { error: "plain string" },
    });
    expect(await failingRegistry.execute("fail", { mode: "object" }, ctx)).toEqual({
      ok: false,
      response: { error: 'tool failed: {"odd":true}' },
    });
  });

  it("makes outputs that JSON cannot carry safe", async () => {
    const circular: Record<string, unknown> = { name: "loop" };
    circular.self = circular;
    const shared = { n: 1 };
    const value = {
      big: 10n ** 20n,
      when: new Date("2025-03-05T10:00:00.000Z"),
      nan: Number.NaN,
      map: new Map([["k", 1]]),
      set: new Set(["a"]),
      gone: undefined,
      fn: () => 1,
      list: [undefined, shared, shared],
      circular,
      error: new Error("inner"),
    };
    const outcome = await createToolRegistry([toolReturning(() => value)]).execute(
      "produce",
      {},
      ctx,
    );
    expect(outcome).toEqual({
      ok: true,
      response: {
        output: {
          big: "100000000000000000000",
          when: "2025-03-05T10:00:00.000Z",
          nan: "NaN",
          map: { k: 1 },
          set: ["a"],
          list: [null, { n: 1 }, { n: 1 }],
          circular: { name: "loop", self: "[Circular]" },
          error: "inner",
        },
      },
    });
    expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome);
  });

  it("answers undefined output with null so the response keeps its output key", async () => {
    const outcome = await createToolRegistry([toolReturning(() => undefined)]).execute(
      "produce",
      {},
      ctx,
    );
    expect(outcome).toEqual({ ok: true, response: { output: null } });
  });
});

describe("tool registry: declarations", () => {
  it("describes each tool with a JSON schema Gemini accepts", () => {
    const registry = createToolRegistry([echo, noArgs]);
    const [echoDeclaration, pingDeclaration] = registry.declarations();
    expect(echoDeclaration).toEqual({
      name: "echo",
      description: "Echoes its arguments.",
      parametersJsonSchema: {
        type: "object",
        properties: {
          text: { type: "string", description: "What to echo" },
          times: { type: "integer", minimum: 1, maximum: 5 },
          options: {
            type: "object",
            properties: { loud: { type: "boolean" } },
            required: ["loud"],
          },
        },
        required: ["text"],
      },
    });
    // Gemini rejects an object schema with no properties, so a tool without arguments has none.
    expect(pingDeclaration).toEqual({ name: "ping", description: "Answers pong." });
  });

  it("hands out frozen declarations, so a caller cannot change what later calls see", () => {
    const registry = createToolRegistry([echo]);
    const first = registry.declarations();
    expect(() => {
      if (first[0]) first[0].name = "changed";
    }).toThrow(TypeError);
    first.pop();
    expect(registry.declarations()[0]?.name).toBe("echo");
  });

  it("refuses tool sets the API would reject", () => {
    expect(() => createToolRegistry([echo, echo])).toThrow(/registered twice/);
    expect(() => createToolRegistry([{ ...echo, name: "has space" }])).toThrow(/invalid tool name/);
    expect(() => createToolRegistry([{ ...echo, name: "x".repeat(65) }])).toThrow(
      /invalid tool name/,
    );
    const notObject = defineTool({
      name: "scalar",
      description: "Takes a bare string.",
      schema: z.string(),
      async run() {
        return null;
      },
    });
    expect(() => createToolRegistry([notObject])).toThrow(/z\.object/);
  });
});
