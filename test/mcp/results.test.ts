import { describe, expect, it } from "vitest";
import { convertResult } from "../../src/mcp/results.js";
import { PIXEL_PNG_BASE64 } from "../fakes/mcp-server.js";

const base64 = (text: string) => Buffer.from(text).toString("base64");

describe("convertResult", () => {
  it("attaches only images Gemini reads, by what their bytes are, and names the rest", () => {
    const svg = base64('<svg xmlns="http://www.w3.org/2000/svg"/>');
    const gif = base64("GIF89a\x01\x00\x01\x00");
    const converted = convertResult(
      {
        content: [
          { type: "image", data: svg, mimeType: "image/svg+xml" },
          { type: "image", data: gif, mimeType: "image/gif" },
          // A PNG that says it is a JPEG goes as the PNG it is.
          { type: "image", data: PIXEL_PNG_BASE64, mimeType: "image/jpeg" },
        ],
      },
      10_000,
    );
    expect(converted.files.map((f) => [f.media, f.mimeType])).toEqual([["photo", "image/png"]]);
    expect(converted.text.split("\n")).toEqual([
      `[image: image/svg+xml, ${Buffer.from(svg, "base64").byteLength} bytes, not shown]`,
      `[image: image/gif, ${Buffer.from(gif, "base64").byteLength} bytes, not shown]`,
      "[image: image/png, attached as file 1]",
    ]);
  });
});
