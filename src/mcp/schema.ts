import type { FunctionDeclaration } from "@google/genai";
import { isRecord, toGeminiSchema } from "../tools/registry.js";

// A schema this large costs every request its bytes; no sensible tool needs one.
const MAX_SCHEMA_CHARS = 32_000;

/** Older generators (zod-to-json-schema, draft-07) put shared parts under "definitions". */
function renameDefinitions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renameDefinitions);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => {
      if (key === "$ref" && typeof inner === "string")
        return [key, inner.replace(/^#\/definitions\//, "#/$defs/")];
      return [key === "definitions" ? "$defs" : key, renameDefinitions(inner)];
    }),
  );
}

/** A `$ref` Gemini cannot follow (another document, or a part of the schema it does not keep). */
function foreignRef(value: unknown): string | undefined {
  if (Array.isArray(value)) return value.map(foreignRef).find((ref) => ref !== undefined);
  if (!isRecord(value)) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (
      key === "$ref" &&
      typeof inner === "string" &&
      inner !== "#" &&
      !inner.startsWith("#/$defs/")
    )
      return inner;
    const found = foreignRef(inner);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * An MCP tool's declaration for Gemini, or why it cannot be offered: its input schema must be
 * an object of named arguments, and what Gemini does not read is left out (the server checks
 * the full schema when the call arrives).
 */
export function declarationFor(
  name: string,
  description: string | undefined,
  inputSchema: unknown,
): { declaration: FunctionDeclaration } | { why: string } {
  if (!isRecord(inputSchema) || inputSchema.type !== "object") {
    return {
      why: 'its input schema is not of type "object" (Gemini calls functions with named arguments)',
    };
  }
  const size = JSON.stringify(inputSchema).length;
  if (size > MAX_SCHEMA_CHARS) {
    return {
      why: `its input schema is ${size} characters, more than the ${MAX_SCHEMA_CHARS} allowed`,
    };
  }
  const renamed = renameDefinitions(inputSchema);
  const ref = foreignRef(renamed);
  if (ref !== undefined)
    return { why: `its input schema refers to "${ref}", which Gemini cannot follow` };
  const schema = toGeminiSchema(renamed) as Record<string, unknown>;
  const hasParameters = isRecord(schema.properties) && Object.keys(schema.properties).length > 0;
  const base = { name, ...(description ? { description } : {}) };
  return { declaration: hasParameters ? { ...base, parametersJsonSchema: schema } : base };
}
