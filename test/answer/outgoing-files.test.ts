import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Part } from "@google/genai";
import { CompiledQuery } from "kysely";
import { describe, expect, it } from "vitest";
import { deliverAnswer } from "../../src/answer/answer-delivery.js";
import { startCourier } from "../../src/answer/courier.js";
import { createDelivery } from "../../src/answer/delivery.js";
import { startLiveAnswer } from "../../src/answer/live-answer.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type Lease } from "../../src/queue/inbox.js";
import { sha256Hex } from "../../src/session/attachments.js";
import type { MediaPart } from "../../src/session/events.js";
import { historyLines, historyLineText } from "../../src/session/history-view.js";
import { call, content, type RecordedRequest, text } from "../fakes/gemini.js";
import { botPerFile, runPrivateMessage } from "../helpers/bot.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { pngImage } from "../helpers/images.js";

const USER = 7171;
const pdf = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "latin1");

const modelTurnOf = (request: RecordedRequest | undefined, index: number) =>
  request?.body.contents.filter((c) => c.role === "model")[index]?.parts ?? [];

describe.each(DATABASE_KINDS)("files Koroku sends (Gemini's answers, send_file) on %s", (kind) => {
  const w = botPerFile({ kind, user: USER });
  let updateId = 0;

  const say = (chat: number, text: string, via = w.bot) =>
    runPrivateMessage(via, { update: ++updateId, chat, user: USER }, { text });

  it("stores an image the model drew, sends it as a photo before the words, and sends it back to Gemini", async () => {
    const image = pngImage(640, 480, 3_000);
    const drawn: Part = {
      inlineData: { mimeType: "image/png", data: image.toString("base64") },
      thoughtSignature: "c2lnbmVkIGltYWdl",
    };
    w.h.fake.script(content({ role: "model", parts: [{ text: "Here is your cat." }, drawn] }));
    await say(USER, "draw a cat");
    expect(w.telegram.sentFiles).toHaveLength(1);
    const photo = w.telegram.sentFiles[0];
    expect(photo?.method).toBe("sendPhoto");
    expect(photo?.bytes.equals(image)).toBe(true);
    const words = w.telegram.sent.find((m) => m.plain_text === "Here is your cat.");
    expect(words?.message_id).toBeGreaterThan(photo?.message.message_id ?? Infinity);

    // Stored as an attachment; the event holds a reference with the part's signature.
    const rows = await w.h.app.database.db
      .selectFrom("messages")
      .select("event_json")
      .where("chat_id", "=", String(USER))
      .where("role", "=", "model")
      .execute();
    expect(rows[0]?.event_json).not.toContain(image.toString("base64").slice(0, 200));
    const answer = (await w.h.app.store.loadContext(String(USER))).events.at(-1)?.event;
    expect(answer?.parts[1]).toMatchObject({
      kind: "media",
      media: "photo",
      sha256: sha256Hex(image),
      mimeType: "image/png",
      thoughtSignature: "c2lnbmVkIGltYWdl",
    });

    // After a restart the next request carries the same bytes, with the signature.
    const restarted = await w.h.restart();
    w.h.fake.script(content({ role: "model", parts: [{ text: "It is grey." }] }));
    const again = w.botWith({}, { ...w.h, app: restarted });
    await say(USER, "what colour is it?", again);
    expect(modelTurnOf(w.h.fake.requests.at(-1), 0)).toEqual([
      { text: "Here is your cat." },
      drawn,
    ]);
    const lines = historyLines(await restarted.store.lastTurns(String(USER), 2));
    expect(lines.slice(0, 3)).toEqual([
      { kind: "user", text: "draw a cat" },
      { kind: "assistant", text: "📷 photo «Here is your cat.»" },
      { kind: "user", text: "what colour is it?" },
    ]);
  });

  it("sends a PDF that code execution made as a document", async () => {
    w.h.fake.script(
      content({
        role: "model",
        parts: [
          { executableCode: { code: "make_pdf()", language: "PYTHON" } },
          { codeExecutionResult: { outcome: "OUTCOME_OK", output: "" } },
          { inlineData: { mimeType: "application/pdf", data: pdf.toString("base64") } },
          { text: "The report is attached." },
        ] as Part[],
      }),
    );
    const before = w.telegram.sentFiles.length;
    await say(USER + 1, "make me a report");
    const sent = w.telegram.sentFiles.slice(before);
    expect(sent.map((f) => [f.method, f.file_name])).toEqual([
      ["sendDocument", `file-${sha256Hex(pdf).slice(0, 12)}.pdf`],
    ]);
    expect(sent[0]?.bytes.equals(pdf)).toBe(true);
    expect(w.telegram.sent.at(-1)?.plain_text).toBe("The report is attached.");
  });

  it("a run after a crash sends only the files and messages Telegram does not have", async () => {
    const save = async (bytes: Buffer, mimeType: string, name: string): Promise<MediaPart> => ({
      kind: "media",
      media: mimeType === "application/pdf" ? "document" : "photo",
      ...(await w.h.app.attachments.save("resume", { bytes, mimeType })),
      name,
    });
    const files = [
      await save(pngImage(100, 100, 500), "image/png", "a.png"),
      await save(pdf, "application/pdf", "b.pdf"),
    ];
    const recorded: number[] = [];
    const delivery = createDelivery({ api: w.bot.api, logger: w.h.app.logger });
    const live = startLiveAnswer({
      api: w.bot.api,
      delivery,
      logger: w.h.app.logger,
      chatId: USER + 2,
      privateChat: true,
      mode: "off",
      draftId: 1,
    });
    const before = { files: w.telegram.sentFiles.length, sent: w.telegram.sent.length };
    await deliverAnswer({
      live,
      delivery,
      read: w.h.app.attachments.read,
      chatId: USER + 2,
      threadId: undefined,
      result: { text: "two files", files, resumed: true },
      // The photo went out before the crash.
      lease: {
        delivered: 1,
        recordDelivered: async (count) => void recorded.push(count),
        // No courier here: nothing runs it.
        deliveredStatement: (count) => CompiledQuery.raw("select ?", [count]),
      },
    });
    expect(w.telegram.sentFiles.slice(before.files).map((f) => f.file_name)).toEqual(["b.pdf"]);
    expect(w.telegram.sent.slice(before.sent).map((m) => m.plain_text)).toEqual(["two files"]);
    expect(recorded).toEqual([2, 3]);
  });
  it('sends files that come with no words alone, without a "(no answer)" after them', async () => {
    const picture: MediaPart = {
      kind: "media",
      media: "photo",
      ...(await w.h.app.attachments.save("alone", {
        bytes: pngImage(64, 64, 300),
        mimeType: "image/png",
      })),
      name: "drawn.png",
    };
    const delivery = createDelivery({ api: w.bot.api, logger: w.h.app.logger });
    const chatId = USER + 3;
    const live = startLiveAnswer({
      api: w.bot.api,
      delivery,
      logger: w.h.app.logger,
      chatId,
      privateChat: true,
      mode: "off",
      draftId: 1,
    });
    await deliverAnswer({
      live,
      delivery,
      read: w.h.app.attachments.read,
      chatId,
      threadId: undefined,
      result: { text: "", files: [picture], resumed: false },
      lease: {
        delivered: 0,
        recordDelivered: async () => {},
        deliveredStatement: (count) => CompiledQuery.raw("select ?", [count]),
      },
    });
    expect(w.telegram.sentFiles.filter((f) => f.chat_id === chatId)).toHaveLength(1);
    expect(w.telegram.sent.filter((m) => m.chat_id === chatId)).toEqual([]);
  });

  it("sends a workspace image as a photo and a PDF as a document, keeps both, and /history shows them", async () => {
    const chart = pngImage(1200, 800, 4_000);
    const workspace = w.h.workspaceOf(String(USER + 10));
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, "chart.png"), chart);
    await writeFile(path.join(workspace, "report.pdf"), pdf);
    w.h.fake.script(
      call("send_file", { path: "chart.png", caption: "Sales by month" }, { id: "a" }),
      call("send_file", { path: "report.pdf" }, { id: "b" }),
      text("Sent both."),
    );
    const before = w.telegram.sentFiles.length;
    await runPrivateMessage(
      w.bot,
      { update: ++updateId, chat: USER + 10, user: USER },
      { text: "send them" },
    );
    const sent = w.telegram.sentFiles.slice(before);

    expect(sent.map((f) => [f.method, f.chat_id - USER, f.file_name, f.caption])).toEqual([
      ["sendPhoto", 10, "chart.png", "Sales by month"],
      ["sendDocument", 10, "report.pdf", undefined],
    ]);
    expect(sent[0]?.bytes.equals(chart)).toBe(true);
    expect(sent[1]?.bytes.equals(pdf)).toBe(true);
    expect(w.telegram.sent.at(-1)?.plain_text).toBe("Sent both.");
    // The model learns what went out.
    const told = w.h.fake.requests.at(-1)?.body.contents.at(-1)?.parts?.[0]?.functionResponse;
    expect(told?.response).toEqual({
      output: { sent: "document", path: "report.pdf", size: pdf.length },
    });

    // Both are attachments of the conversation: in the database, and in its history.
    const held = await w.h.app.database.db
      .selectFrom("attachment_uses")
      .select(["sha256", "file_name"])
      .where("chat_id", "=", String(USER + 10))
      .orderBy("file_name")
      .execute();
    expect(held).toEqual([
      { sha256: sha256Hex(chart), file_name: "chart.png" },
      { sha256: sha256Hex(pdf), file_name: "report.pdf" },
    ]);
    const lines = historyLines(await w.h.app.store.lastTurns(String(USER + 10), 1)).map(
      historyLineText,
    );
    expect(lines).toEqual([
      "You: send them",
      '✓ send_file {"path":"chart.png","caption":"Sales by month"}',
      "Koroku: 📷 photo «Sales by month»",
      '✓ send_file {"path":"report.pdf"}',
      "Koroku: 📄 report.pdf",
      "Koroku: Sent both.",
    ]);
  });

  it("does not send a file again after a crash that came once Telegram had it: the call is answered with what it did", async () => {
    const chat = USER + 12;
    const chart = pngImage(800, 600, 2_000);
    const workspace = w.h.workspaceOf(String(chat));
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, "chart.png"), chart);
    const { db, kind: dbKind } = w.h.app.database;
    const inbox = createInbox({
      db,
      kind: dbKind,
      workerId: "w",
      leaseMs: 30_000,
      scrub: createScrubber([]),
    });
    const courier = startCourier({
      token: w.telegram.token,
      apiRoot: w.telegram.apiRoot,
      database: w.h.app.config.database,
      logger: w.h.app.logger,
    });
    const update = ++updateId;
    await inbox.add(update, String(chat), { update_id: update });
    const claimed = async () => {
      const item = await inbox.claim();
      if (item?.updateId !== update) throw new Error("expected the update to claim");
      return inbox.leaseOf(item);
    };
    const run = (lease: Lease) =>
      runPrivateMessage(
        w.botWith({ courier }),
        { update, chat, user: USER },
        { text: "send the chart" },
        lease,
      );
    const before = w.telegram.sentFiles.length;
    try {
      w.h.fake.script(call("send_file", { path: "chart.png" }));
      const first = await claimed();
      // The process dies as soon as Telegram has the file, before the call's result is stored.
      const killed = new Error("killed");
      const dying: Lease = Object.assign(Object.create(first), {
        ensureHeld: async () => {
          if (w.telegram.sentFiles.length > before) throw killed;
          await first.ensureHeld();
        },
      });
      await expect(run(dying)).rejects.toBe(killed);
      expect(w.telegram.sentFiles.length).toBe(before + 1);

      // The restart runs the update again.
      await db
        .updateTable("inbox")
        .set({ status: "pending", lease_until: null, claimed_by: null })
        .where("update_id", "=", update)
        .execute();
      w.h.fake.script(text("The chart is above."));
      await run(await claimed());
      expect(w.telegram.sentFiles.length).toBe(before + 1);
      expect(w.telegram.sent.at(-1)?.plain_text).toBe("The chart is above.");
      const told = w.h.fake.requests.at(-1)?.body.contents.at(-1)?.parts?.[0]?.functionResponse;
      expect(told?.response).toEqual({
        output: { sent: "photo", path: "chart.png", size: chart.length },
      });
      const lines = historyLines(await w.h.app.store.lastTurns(String(chat), 1)).map(
        historyLineText,
      );
      expect(lines).toEqual([
        "You: send the chart",
        '✓ send_file {"path":"chart.png"}',
        "Koroku: 📷 photo",
        "Koroku: The chart is above.",
      ]);
    } finally {
      await courier.stop();
    }
  });

  it("tells the model what went wrong, and sends nothing, for a file that is not there", async () => {
    w.h.fake.script(call("send_file", { path: "gone.png" }), text("It is not there."));
    const before = w.telegram.sentFiles.length;
    await runPrivateMessage(
      w.bot,
      { update: ++updateId, chat: USER + 11, user: USER },
      { text: "send it" },
    );
    expect(w.telegram.sentFiles.length).toBe(before);
    const told = w.h.fake.requests.at(-1)?.body.contents.at(-1)?.parts?.[0]?.functionResponse;
    expect(told?.response).toEqual({
      error: '"gone.png" does not exist; call list_files to see what is there',
    });
    expect(w.telegram.sent.at(-1)?.plain_text).toBe("It is not there.");
  });
});
