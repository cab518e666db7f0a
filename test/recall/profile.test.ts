import { beforeAll, describe, expect, it } from "vitest";
import {
  createProfiles,
  factMatches,
  PROFILE_BUDGET,
  type Profiles,
  profileInstruction,
} from "../../src/recall/profile.js";
import { createProfileTools } from "../../src/recall/profile-tools.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { migratedDatabasePerFile } from "../helpers/migrated-database.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, outputOf } from "../tools/temp-dir.js";

describe.each(DATABASE_KINDS)("profiles on %s", (kind) => {
  const db = migratedDatabasePerFile(kind);
  let profiles: Profiles;

  beforeAll(() => {
    profiles = createProfiles({ db: db() });
  });

  it("keeps a fact once per scope and refuses past the budget, saying what to do", async () => {
    const tools = createToolRegistry(createProfileTools({ profiles }));
    const remember = (fact: string, chat = "9301") =>
      tools.execute("remember", { fact }, toolContext(chat));
    expect(outputOf(await remember("likes tea"))).toEqual({
      remembered: "likes tea",
      alreadyKnown: false,
    });
    expect(outputOf(await remember("Likes  TEA"))).toMatchObject({ alreadyKnown: true });
    expect(outputOf(await remember("likes tea", "-9301"))).toMatchObject({ alreadyKnown: false });
    for (let i = 1; i < PROFILE_BUDGET.entries; i++) await remember(`fact number ${i}`);
    expect(await profiles.list("private-9301")).toHaveLength(PROFILE_BUDGET.entries);
    expect(errorOf(await remember("one too many"))).toMatch(
      /^the profile is full \(40 facts, .*forget an outdated/,
    );
    const forgotten = outputOf(
      await tools.execute("forget", { fact: "tea" }, toolContext("9301:4")),
    );
    expect(forgotten).toEqual({ forgotten: ["likes tea"] });
    expect((await profiles.list("group-9301")).map((e) => e.fact)).toEqual(["likes tea"]);
    expect(errorOf(await remember("x".repeat(PROFILE_BUDGET.factChars + 1)))).toMatch(/^invalid/);
  });

  it("replaces the profile with a consolidation cut to the budget, never with nothing", async () => {
    await profiles.remember("private-9302", "old fact");
    const read = await profiles.list("private-9302");
    expect((await profiles.replace("private-9302", ["", "  "], read))?.map((e) => e.fact)).toEqual([
      "old fact",
    ]);
    const many = Array.from({ length: 60 }, (_, i) => `new fact ${i}`);
    const after = await profiles.replace("private-9302", ["new fact 0", ...many], read);
    expect(after).toHaveLength(PROFILE_BUDGET.entries);
    expect(after?.[0]?.fact).toBe("new fact 0");
    expect(after?.[1]?.fact).toBe("new fact 1");
  });

  it("replaces nothing when the profile changed since the consolidation read it", async () => {
    const scope = "private-9303";
    await profiles.remember(scope, "daughter Mia, born 2019");
    await profiles.remember(scope, "prefers metric units");
    const read = await profiles.list(scope);
    // Forgotten while the summary model wrote, which still lists it.
    await profiles.forget(scope, "Mia");
    const written = ["daughter Mia, born 2019", "prefers metric units"];
    expect(await profiles.replace(scope, written, read)).toBeUndefined();
    expect((await profiles.list(scope)).map((e) => e.fact)).toEqual(["prefers metric units"]);
    // Remembered meanwhile: not dropped by a list that never saw it.
    const again = await profiles.list(scope);
    await profiles.remember(scope, "lives in Lyon");
    expect(await profiles.replace(scope, ["prefers metric units"], again)).toBeUndefined();
    expect((await profiles.list(scope)).map((e) => e.fact)).toContain("lives in Lyon");
  });
});

describe("profile text", () => {
  it("matches whole words in any case, and puts the profile in the instruction as a list", () => {
    expect(factMatches("Daughter Mia, born 2019", "mia 2019")).toBe(true);
    expect(factMatches("Daughter Mia, born 2019", "mi")).toBe(false);
    expect(factMatches("anything", "  ")).toBe(false);
    // As SQLite's word index, which /forget hides messages by: accents or none, the same word.
    expect(factMatches("Daughter Zoë likes crêpes", "zoe crepes")).toBe(true);
    expect(factMatches("Daughter Zoe", "Zoë")).toBe(true);
    expect(factMatches("Daughter Zoë", "zo")).toBe(false);
    expect(factMatches("バカ", "ハカ")).toBe(false);
    expect(profileInstruction([])).toBe("");
    expect(profileInstruction([{ fact: "a" }, { fact: "b" }])).toMatch(/\n- a\n- b$/);
  });
});
