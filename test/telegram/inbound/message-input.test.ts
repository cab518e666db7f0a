import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Message } from "grammy/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorkspaces } from "../../../src/scope/workspaces.js";
import { sha256Hex } from "../../../src/session/attachments.js";
import { messageInput } from "../../../src/telegram/inbound/message-input.js";
import { captureLogger } from "../../helpers/logs.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "koroku-message-input-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a document while the workspace cannot be used", () => {
  it("is read and answered, only its workspace copy missing, and the log says why", async () => {
    // WORKSPACE_DIR exists, but no start could sort it into scopes (it was not writable then).
    await mkdir(path.join(dir, "ws"));
    const { logger, lines } = captureLogger();
    const bytes = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "latin1");
    const input = messageInput({
      logger,
      media: {
        download: async () => bytes,
        save: async (_conversation, file) => ({
          sha256: sha256Hex(file.bytes),
          mimeType: file.mimeType,
          size: file.bytes.byteLength,
        }),
        read: async () => new Map(),
        maxBytes: 1024 * 1024,
        workspaces: createWorkspaces(path.join(dir, "ws")),
      },
    });
    const message = {
      message_id: 1,
      date: 0,
      chat: { id: 42, type: "private", first_name: "Ann" },
      document: {
        file_id: "f",
        file_unique_id: "u",
        file_name: "report.pdf",
        mime_type: "application/pdf",
        file_size: bytes.length,
      },
    } as unknown as Message;
    const read = await input.readMessage("42", message);
    expect(read).toMatchObject({
      parts: [{ kind: "media", media: "document" }],
      words: [expect.stringContaining("Not saved in the workspace")],
    });
    expect(lines.map((l) => l.msg)).toContain(
      "could not copy a document into the workspace; answering without that copy",
    );
  });
});
