import { mkdir, symlink, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TELEGRAM_UPLOAD_MAX_BYTES } from "../../src/media/upload-limits.js";
import { sha256Hex } from "../../src/session/attachments.js";
import { createToolRegistry, type FileToSend } from "../../src/tools/registry.js";
import { createSendFileTool } from "../../src/tools/send-file.js";
import { pngImage } from "../helpers/images.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, oneFolder, outputOf, useWorkspaceDirs } from "./temp-dir.js";

describe("send_file", () => {
  const dirs = useWorkspaceDirs();
  const setUp = () => {
    const sent: FileToSend[] = [];
    const saved: string[] = [];
    const registry = createToolRegistry([
      createSendFileTool({
        workspaces: oneFolder(dirs().ws),
        saveFile: async (chatId, file) => {
          saved.push(`${chatId} ${file.fileName} ${file.mimeType}`);
          return {
            sha256: sha256Hex(file.bytes),
            mimeType: file.mimeType,
            size: file.bytes.length,
          };
        },
      }),
    ]);
    const sendFile = async (file: FileToSend) => {
      sent.push(file);
      return file.mimeType === "image/png" ? ("photo" as const) : ("document" as const);
    };
    const run = (args: Record<string, unknown>, withChat = true) =>
      registry.execute("send_file", args, toolContext("9", withChat ? { sendFile } : {}));
    return { run, sent, saved };
  };

  it("sends an image as a photo with its caption, stores it, and tells the model", async () => {
    const image = pngImage(300, 200, 1_000);
    await mkdir(path.join(dirs().ws, "charts"));
    await writeFile(path.join(dirs().ws, "charts", "sales.png"), image);
    const { run, sent, saved } = setUp();
    const outcome = await run({ path: "charts/sales.png", caption: "Sales" });
    expect(outputOf(outcome)).toEqual({ sent: "photo", path: "charts/sales.png", size: 1_000 });
    expect(outcome.ok && outcome.files).toEqual([
      {
        kind: "media",
        media: "photo",
        sha256: sha256Hex(image),
        mimeType: "image/png",
        size: 1_000,
        name: "sales.png",
      },
    ]);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ name: "sales.png", mimeType: "image/png", caption: "Sales" });
    expect(sent[0]?.bytes.equals(image)).toBe(true);
    expect(saved).toEqual(["9 sales.png image/png"]);
  });

  it("sends a PDF and a text file as documents of their type", async () => {
    await writeFile(path.join(dirs().ws, "report.pdf"), "%PDF-1.4\n%%EOF\n");
    await writeFile(path.join(dirs().ws, "notes.md"), "# notes\n");
    const { run, sent } = setUp();
    expect(outputOf(await run({ path: "report.pdf" }))).toMatchObject({ sent: "document" });
    expect(outputOf(await run({ path: "notes.md" }))).toMatchObject({ sent: "document" });
    expect(sent.map((f) => [f.name, f.mimeType, f.caption])).toEqual([
      ["report.pdf", "application/pdf", undefined],
      ["notes.md", "text/plain", undefined],
    ]);
  });

  it("refuses a missing file, a directory, an empty file and one over Telegram's limit", async () => {
    const { run, sent, saved } = setUp();
    expect(errorOf(await run({ path: "nope.png" }))).toBe(
      '"nope.png" does not exist; call list_files to see what is there',
    );
    await mkdir(path.join(dirs().ws, "folder"));
    expect(errorOf(await run({ path: "folder" }))).toBe(
      '"folder" is a directory; call list_files to see inside it',
    );
    await writeFile(path.join(dirs().ws, "empty.txt"), "");
    expect(errorOf(await run({ path: "empty.txt" }))).toBe(
      '"empty.txt" is empty; Telegram does not send empty files',
    );
    const big = path.join(dirs().ws, "big.bin");
    await writeFile(big, "");
    await truncate(big, TELEGRAM_UPLOAD_MAX_BYTES + 1);
    expect(errorOf(await run({ path: "big.bin" }))).toBe(
      `"big.bin" is ${TELEGRAM_UPLOAD_MAX_BYTES + 1} bytes; Telegram takes files of up to 50.0 MB from a bot`,
    );
    expect(sent).toEqual([]);
    expect(saved).toEqual([]);
  });

  it("refuses paths outside the workspace, by .., absolute path or symlink", async () => {
    const { run, sent } = setUp();
    expect(errorOf(await run({ path: "../outside/secret.txt" }))).toMatch(/leaves the workspace/);
    expect(errorOf(await run({ path: path.join(dirs().outside, "secret.txt") }))).toMatch(
      /is absolute/,
    );
    await symlink(dirs().outside, path.join(dirs().ws, "link"));
    expect(errorOf(await run({ path: "link/secret.txt" }))).toMatch(/points outside the workspace/);
    expect(sent).toEqual([]);
  });

  it("says where it cannot send (the terminal), and refuses a caption Telegram would", async () => {
    await writeFile(path.join(dirs().ws, "a.txt"), "a");
    const { run, sent } = setUp();
    expect(errorOf(await run({ path: "a.txt" }, false))).toBe(
      "this conversation has no chat to send files to; send_file works in Telegram",
    );
    expect(errorOf(await run({ path: "a.txt", caption: "x".repeat(1025) }))).toMatch(
      /^invalid arguments for send_file: caption: /,
    );
    expect(sent).toEqual([]);
  });
});
