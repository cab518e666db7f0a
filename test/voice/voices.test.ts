import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lazyGenAi } from "../../src/agent/genai-sdk.js";
import { StartupError } from "../../src/startup-error.js";
import { checkVoiceAtStart, checkVoiceIn, prebuiltVoices } from "../../src/voice/voices.js";
import { type FakeGemini, PREBUILT_VOICES, startFakeGemini } from "../fakes/gemini.js";
import { captureLogger } from "../helpers/logs.js";
import { refusingPort } from "../helpers/refusing-port.js";

describe("Gemini's voice list", () => {
  let gemini: FakeGemini;
  beforeAll(async () => {
    gemini = await startFakeGemini({ apiKey: "k" });
  });
  afterAll(async () => {
    await gemini.close();
  });

  it("reads the prebuilt voices through the SDK", async () => {
    const sdk = lazyGenAi({ apiKey: "k", baseUrl: gemini.baseUrl, fetch });
    expect(await prebuiltVoices((await sdk()).ai)).toEqual([...PREBUILT_VOICES]);
  });

  it("starts with a listed voice, and refuses another, naming the ones there are", async () => {
    const { logger } = captureLogger();
    const check = (voice: string) =>
      checkVoiceAtStart({ apiKey: "k", baseUrl: gemini.baseUrl, voice, logger });
    await expect(check("Puck")).resolves.toBeUndefined();
    const refused = check("Robot");
    await expect(refused).rejects.toBeInstanceOf(StartupError);
    await expect(refused).rejects.toThrow(
      /GEMINI_VOICE "Robot" is not one of Gemini's prebuilt voices\. Set it to one of: Achernar, Achird, .*Zubenelgenubi\./,
    );
    expect(() => checkVoiceIn("kore", PREBUILT_VOICES)).toThrow(
      /\(names are spelt as listed: "Kore"\)/,
    );
  });

  it("starts without the check when the list cannot be read, and says so", async () => {
    const { logger, lines } = captureLogger();
    const port = await refusingPort();
    await checkVoiceAtStart({
      apiKey: "k",
      baseUrl: `http://127.0.0.1:${port}`,
      voice: "Robot",
      logger,
    });
    expect(lines.map((l) => l.msg)).toContain(
      "could not read Gemini's voice list; GEMINI_VOICE is not checked",
    );
  });
});
