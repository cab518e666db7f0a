import type { GenerateContentResponse, Part } from "@google/genai";
import { describe, expect, it } from "vitest";
import { StreamAssembly } from "../../src/agent/stream-assembly.js";

const chunk = (parts: Part[], finishReason?: string): GenerateContentResponse =>
  ({
    candidates: [
      { content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) },
    ],
  }) as GenerateContentResponse;

describe("a streamed answer being assembled", () => {
  it("ends without a call once Gemini finishes an answer of text", () => {
    const assembly = new StreamAssembly();
    expect(assembly.add(chunk([{ text: "Hello" }]))).toBe(true);
    expect(assembly.endsWithoutCall).toBe(false);
    expect(assembly.add(chunk([{ text: ", world." }], "STOP"))).toBe(true);
    expect(assembly.endsWithoutCall).toBe(true);
    expect(assembly.visibleText).toBe("Hello, world.");
  });

  it("does not, when the chunk that finishes it also asks for a function call", () => {
    const assembly = new StreamAssembly();
    const call = { functionCall: { name: "read_file", args: { path: "a.txt" }, id: "c-1" } };
    expect(assembly.add(chunk([{ text: "Let me look." }, call], "STOP"))).toBe(true);
    expect(assembly.endsWithoutCall).toBe(false);
  });

  it("does not, when the call came in an earlier chunk", () => {
    const assembly = new StreamAssembly();
    assembly.add(chunk([{ functionCall: { name: "read_file", args: {}, id: "c-1" } }]));
    assembly.add(chunk([{ text: "" }], "STOP"));
    expect(assembly.endsWithoutCall).toBe(false);
  });
});
