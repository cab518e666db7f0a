import { describe, expect, it } from "vitest";
import { pictureNamed, picturesOf } from "../../src/images/pictures.js";
import { eventOf, mediaPart, storedSession } from "../helpers/events.js";

describe("picturesOf", () => {
  it("counts an image sent as a file, latest last, and no other file", () => {
    const photo = mediaPart({ media: "photo", mimeType: "image/jpeg", sha256: "1".repeat(64) });
    const screenshot = mediaPart({
      media: "document",
      mimeType: "image/png",
      name: "screenshot.png",
      sha256: "2".repeat(64),
    });
    const pdf = mediaPart({ media: "document", mimeType: "application/pdf", name: "a.pdf" });
    const context = {
      summary: undefined,
      events: [
        storedSession(eventOf("user", [photo]), 1),
        storedSession(eventOf("user", [screenshot, pdf]), 2),
      ],
    };
    const pictures = picturesOf(context);
    expect(pictures).toEqual([photo, screenshot]);
    expect(pictureNamed(pictures, "last")).toBe(screenshot);
    expect(pictureNamed(pictures, "screenshot.png")).toBe(screenshot);
  });
});
