import { describe, expect, it } from "vitest";
import { declarationFor } from "../../src/mcp/schema.js";

describe("declarationFor", () => {
  it("keeps what Gemini reads of an object schema", () => {
    const result = declarationFor("s__t", "does t", {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        when: { type: "string", pattern: "^\\d+$" },
        item: { $ref: "#/definitions/Item" },
      },
      definitions: {
        Item: { type: "object", properties: { n: { type: "integer", exclusiveMinimum: 0 } } },
      },
      required: ["when"],
    });
    expect(result).toEqual({
      declaration: {
        name: "s__t",
        description: "does t",
        parametersJsonSchema: {
          type: "object",
          properties: { when: { type: "string" }, item: { $ref: "#/$defs/Item" } },
          $defs: { Item: { type: "object", properties: { n: { type: "integer" } } } },
          required: ["when"],
        },
      },
    });
  });

  it("declares a tool without arguments without parameters", () => {
    expect(declarationFor("s__t", undefined, { type: "object", properties: {} })).toEqual({
      declaration: { name: "s__t" },
    });
  });

  it("says why a schema cannot be offered", () => {
    expect(declarationFor("s__t", "", { type: "string" })).toEqual({
      why: 'its input schema is not of type "object" (Gemini calls functions with named arguments)',
    });
    expect(
      declarationFor("s__t", "", {
        type: "object",
        properties: { a: { $ref: "https://x/y.json" } },
      }),
    ).toEqual({ why: 'its input schema refers to "https://x/y.json", which Gemini cannot follow' });
    const big = { type: "object", description: "d".repeat(40_000) };
    expect(declarationFor("s__t", "", big)).toMatchObject({
      why: expect.stringContaining("more than"),
    });
  });
});
