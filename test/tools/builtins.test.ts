import path from "node:path";
import { describe, expect, it } from "vitest";
import { createBuiltinTools } from "../../src/tools/builtins.js";
import { createToolRegistry, type ToolRegistry } from "../../src/tools/registry.js";
import { validateRequest } from "../fakes/gemini-validation.js";
import { toolContext } from "../helpers/tool-context.js";
import { oneFolder, outputOf, useTempDir } from "./temp-dir.js";

const namesOf = (registry: ToolRegistry) => registry.declarations().map((d) => d.name);

// What Gemini documents for parametersJsonSchema; anything else risks a 400 for every request.
const ALLOWED_SCHEMA_KEYS = new Set([
  "type",
  "description",
  "properties",
  "required",
  "minimum",
  "maximum",
  "items",
  "enum",
  "format",
]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Every keyword used anywhere in a schema, nested properties and items included. */
function schemaKeys(schema: unknown): string[] {
  if (!isRecord(schema)) return [];
  return Object.entries(schema).flatMap(([key, value]) => {
    if (key === "properties" && isRecord(value)) {
      return [key, ...Object.values(value).flatMap(schemaKeys)];
    }
    return key === "items" ? [key, ...schemaKeys(value)] : [key];
  });
}

describe("built-in tools", () => {
  const base = useTempDir("builtins");
  const build = (enableShell: boolean) =>
    createBuiltinTools({
      workspaces: oneFolder(path.join(base(), "ws")),
      memoryDir: path.join(base(), "memory"),
      enableShell,
      search: async () => [],
      saveFile: async () => {
        throw new Error("no files here");
      },
      now: () => new Date("2025-03-05T12:00:00.000Z"),
    });

  it("registers run_command only when the shell is enabled", () => {
    const names = [
      "get_current_time",
      "list_files",
      "read_file",
      "write_file",
      "send_file",
      "read_memory",
      "search_history",
    ];
    expect(namesOf(createToolRegistry(build(false)))).toEqual(names);
    expect(namesOf(createToolRegistry(build(true)))).toEqual([...names, "run_command"]);
  });

  it("declares every tool with a description and an object schema of its arguments", () => {
    const declarations = createToolRegistry(build(true)).declarations();
    const required = Object.fromEntries(
      declarations.map((declaration) => {
        const schema = declaration.parametersJsonSchema as
          | { type: string; properties: Record<string, unknown>; required?: string[] }
          | undefined;
        expect(declaration.description?.length).toBeGreaterThan(20);
        if (schema === undefined) return [declaration.name, null];
        expect(schema.type).toBe("object");
        expect(Object.keys(schema.properties).length).toBeGreaterThan(0);
        for (const key of schemaKeys(schema)) expect(ALLOWED_SCHEMA_KEYS).toContain(key);
        return [declaration.name, schema.required ?? []];
      }),
    );
    expect(required).toEqual({
      get_current_time: null,
      list_files: [],
      read_file: ["path"],
      write_file: ["path", "content"],
      send_file: ["path"],
      read_memory: [],
      search_history: ["query"],
      run_command: ["command"],
    });
  });

  it("passes the fake Gemini's request checks", () => {
    const body = {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      tools: [{ functionDeclarations: createToolRegistry(build(true)).declarations() }],
    };
    const book = {
      bySignature: new Map(),
      callKeys: new Set<string>(),
      serverParts: new Map<string, string>(),
      signedServerParts: new Set<string>(),
    };
    expect(validateRequest(body, book)).toBeUndefined();
  });

  it("wires the injected clock and directories", async () => {
    const registry = createToolRegistry(build(false));
    const ctx = toolContext("local");
    expect(outputOf(await registry.execute("get_current_time", {}, ctx))).toMatchObject({
      iso: "2025-03-05T12:00:00.000Z",
    });
    await registry.execute("write_file", { path: "a.txt", content: "hi" }, ctx);
    expect(outputOf(await registry.execute("read_file", { path: "a.txt" }, ctx))).toMatchObject({
      content: "hi",
    });
    expect(outputOf(await registry.execute("read_memory", {}, ctx))).toMatchObject({ dates: [] });
  });
});
