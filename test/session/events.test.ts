import type { Content, Part } from "@google/genai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  fromContent,
  parseStoredEvent,
  type SessionEvent,
  toContent,
  UnsupportedPartError,
} from "../../src/session/events.js";

// JSON values as Gemini sends them in args/responses: nested objects, arrays, unicode, empty ones.
const jsonValue = fc.jsonValue({ maxDepth: 4 });
const jsonObject = fc.dictionary(fc.string({ unit: "grapheme" }), jsonValue, { maxKeys: 5 });
const signature = fc.base64String({ minLength: 4, maxLength: 200 });
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const withDefined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const textPart: fc.Arbitrary<Part> = fc
  .record({
    text: fc.string({ unit: "grapheme" }),
    thought: optional(fc.boolean()),
    thoughtSignature: optional(signature),
  })
  .map(withDefined);
const callPart: fc.Arbitrary<Part> = fc
  .record({
    name: fc.stringMatching(/^[a-z_]{1,20}$/),
    args: optional(jsonObject),
    id: optional(fc.uuid()),
    thoughtSignature: optional(signature),
  })
  .map(({ name, args, id, thoughtSignature }) =>
    withDefined({ functionCall: withDefined({ name, args, id }), thoughtSignature }),
  );
const responsePart: fc.Arbitrary<Part> = fc
  .record({
    name: fc.stringMatching(/^[a-z_]{1,20}$/),
    response: jsonObject,
    id: optional(fc.uuid()),
  })
  .map(({ name, response, id }) => ({ functionResponse: withDefined({ name, response, id }) }));

// Gemini's server-side tool parts: every field optional, as the SDK types them.
const serverPart: fc.Arbitrary<Part> = fc
  .record({
    which: fc.constantFrom("toolCall", "toolResponse", "executableCode", "codeExecutionResult"),
    id: optional(fc.string()),
    toolType: optional(fc.constantFrom("GOOGLE_SEARCH_WEB", "URL_CONTEXT")),
    payload: optional(jsonObject),
    code: optional(fc.string({ unit: "grapheme" })),
    tag: optional(fc.constantFrom("PYTHON", "OUTCOME_OK", "OUTCOME_FAILED")),
    thoughtSignature: optional(signature),
  })
  .map(({ which, id, toolType, payload, code, tag, thoughtSignature }) => {
    const data = {
      toolCall: { id, toolType, args: payload },
      toolResponse: { id, toolType, response: payload },
      executableCode: { code, language: tag, id },
      codeExecutionResult: { outcome: tag, output: code, id },
    }[which];
    return withDefined({ [which]: withDefined(data), thoughtSignature }) as Part;
  });

const content: fc.Arbitrary<Content> = fc.oneof(
  fc.record({
    role: fc.constant("model"),
    parts: fc.array(fc.oneof(textPart, callPart, serverPart), { maxLength: 6 }),
  }),
  fc.record({
    role: fc.constant("user"),
    parts: fc.array(fc.oneof(textPart, responsePart), { maxLength: 6 }),
  }),
);

describe("event model", () => {
  it("round-trips random Contents exactly, also through stored JSON", () => {
    fc.assert(
      fc.property(content, (c) => {
        const event = fromContent(c);
        expect(toContent(event)).toEqual(c);
        const stored = parseStoredEvent(JSON.stringify(event));
        expect(stored.ok).toBe(true);
        // Stored JSON is compared as JSON: the wire format cannot tell -0 from 0 either.
        if (stored.ok && stored.event.event_type === "session") {
          expect(JSON.stringify(toContent(stored.event))).toBe(JSON.stringify(c));
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  });

  it("keeps thought signatures byte-for-byte, including unusual characters", () => {
    const sig = "CiQB+/=\u00e9\u{1F600}\n\t end";
    const c: Content = {
      role: "model",
      parts: [{ functionCall: { name: "f", args: {} }, thoughtSignature: sig }],
    };
    const back = parseStoredEvent(JSON.stringify(fromContent(c)));
    expect(
      back.ok &&
        back.event.event_type === "session" &&
        toContent(back.event).parts?.[0]?.thoughtSignature,
    ).toBe(sig);
  });

  it("keeps thought parts and the thought flag", () => {
    const c: Content = {
      role: "model",
      parts: [
        { text: "thinking…", thought: true },
        { text: "answer", thoughtSignature: "s1" },
        { text: "", thought: false },
      ],
    };
    expect(toContent(fromContent(c))).toEqual(c);
  });

  it("keeps a function response's call metadata to itself: Gemini never sees it", () => {
    const event: SessionEvent = {
      v: 1,
      event_type: "session",
      role: "user",
      parts: [
        {
          kind: "function_response",
          name: "read_file",
          response: { output: "x" },
          id: "1",
          call: { name: "read_file", args: { path: "a" } },
        },
      ],
    };
    expect(toContent(event).parts?.[0]).toEqual({
      functionResponse: { name: "read_file", response: { output: "x" }, id: "1" },
    });
  });

  it("refuses parts it cannot store, naming them", () => {
    const image: Content = {
      role: "user",
      parts: [{ text: "see" }, { inlineData: { mimeType: "image/png", data: "AAAA" } }],
    };
    expect(() => fromContent(image)).toThrow(UnsupportedPartError);
    expect(() => fromContent(image)).toThrow(/Part 1 holds "inlineData"/);
    const code = {
      role: "model",
      parts: [{ executableCode: { code: "print(1)", language: "PYTHON", sandbox: "x" } }],
    } as unknown as Content;
    expect(() => fromContent(code)).toThrow(/executableCode\.sandbox/);
    const partial: Content = {
      role: "model",
      parts: [{ functionCall: { name: "f", willContinue: true } }],
    };
    expect(() => fromContent(partial)).toThrow(/functionCall\.willContinue/);
    expect(() => fromContent({ role: "user", parts: [{}] })).toThrow(/empty part/);
  });

  it("keeps grounding metadata with the answer but never sends it back", () => {
    const event = fromContent({ role: "model", parts: [{ text: "grounded" }] });
    event.parts.push({ kind: "grounding", metadata: { webSearchQueries: ["q"] } });
    const stored = parseStoredEvent(JSON.stringify(event));
    expect(stored).toEqual({ ok: true, event });
    expect(toContent(event)).toEqual({ role: "model", parts: [{ text: "grounded" }] });
  });

  it("loads version-0 rows (raw Contents) and reports invalid JSON without throwing", () => {
    const v0 = parseStoredEvent(JSON.stringify({ role: "user", parts: [{ text: "old" }] }));
    expect(v0).toEqual({
      ok: true,
      event: { v: 1, event_type: "session", role: "user", parts: [{ kind: "text", text: "old" }] },
    });
    expect(parseStoredEvent("{oops").ok).toBe(false);
    const wrong = parseStoredEvent(
      JSON.stringify({ v: 1, event_type: "session", role: "user", parts: [{ kind: "image" }] }),
    );
    expect(wrong.ok).toBe(false);
  });
});
