import { describe, expect, it } from "vitest";
import { createVoiceSettings } from "../../src/voice/voice-settings.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { migratedDatabasePerFile } from "../helpers/migrated-database.js";

describe.each(DATABASE_KINDS)("/voice settings on %s", (kind) => {
  const db = migratedDatabasePerFile(kind);

  it("fall back to VOICE_REPLIES, and follow a group to the supergroup it became", async () => {
    const settings = createVoiceSettings({ db: db(), fallback: "auto" });
    expect(await settings.modeOf("-100")).toBe("auto");
    await settings.set("-100", "off");
    expect(await settings.modeOf("-100")).toBe("off");

    expect(await settings.move("-100", "-1002000")).toBe(1);
    expect(await settings.modeOf("-1002000")).toBe("off");
    expect(await settings.modeOf("-100")).toBe("auto");
  });

  it("keep the new chat's own setting when it has one", async () => {
    const settings = createVoiceSettings({ db: db(), fallback: "auto" });
    await settings.set("-300", "off");
    await settings.set("-1003000", "always");
    expect(await settings.move("-300", "-1003000")).toBe(0);
    expect(await settings.modeOf("-1003000")).toBe("always");
    expect(await settings.modeOf("-300")).toBe("auto");
  });
});
