import { Composer, InlineKeyboard } from "grammy";
import type { Delivery } from "../../answer/delivery.js";
import { scopeKeyOf } from "../../recall/area.js";
import type { ForgetAsked, Forgetting } from "../../recall/forgetting.js";
import { PROFILE_BUDGET, type ProfileEntry, type Profiles } from "../../recall/profile.js";
import { escapeHtml } from "../../render/markdown-html.js";
import { truncate } from "../../session/event-text.js";
import type { TurnContext } from "../turn-context.js";
import { editListing, sendListing } from "./listing.js";

const DELETE_DATA = /^memory:del:(\d+)$/;
const CONFIRM_DATA = /^forget:yes:(\d+)$/;
const BUTTON_FACT_CHARS = 40;
const PROFILE_TITLE = "What I remember";

export type MemoryCommandDeps = {
  profiles: Pick<Profiles, "list" | "remove">;
  forgetting: Forgetting;
  delivery: Delivery;
};

function profileView(entries: readonly ProfileEntry[]) {
  if (entries.length === 0) {
    return {
      html: "🧠 I keep no facts about you here yet. I note lasting facts and preferences as we talk; ask me to remember something.",
      keyboard: undefined,
    };
  }
  return {
    html: [
      `🧠 <b>${PROFILE_TITLE}</b> (${entries.length} of at most ${PROFILE_BUDGET.entries})`,
      ...entries.map((e, i) => `${i + 1}. ${escapeHtml(e.fact)}`),
    ].join("\n"),
    keyboard: InlineKeyboard.from(
      entries.map((e, i) => [
        InlineKeyboard.text(
          `🗑 ${i + 1}. ${truncate(e.fact, BUTTON_FACT_CHARS)}`,
          `memory:del:${e.id}`,
        ),
      ]),
    ),
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const summaries = (n: number) => `${plural(n, "summary", "summaries")} in my memory files`;

/** What /forget found beyond the profile, and the question its button answers. */
function offerText(asked: ForgetAsked, quoted: string): string {
  const found = [
    ...(asked.matching > 0 ? [plural(asked.matching, "stored message")] : []),
    ...(asked.memoryEntries > 0 ? [summaries(asked.memoryEntries)] : []),
  ];
  const one = found.length === 1 && asked.matching + asked.memoryEntries === 1;
  const what = `${found.join(" and ")} ${one ? "has" : "have"} all of ${quoted}.`;
  const them = one ? "it" : "them";
  if (asked.memoryEntries === 0) {
    return `${what} Hide ${them} from my recall? They stay stored, marked as forgotten, and I will not find them again.`;
  }
  if (asked.matching === 0) return `${what} Delete ${them} from my memory files?`;
  return `${what} Hide them from my recall? The messages stay stored, marked as forgotten, and I will not find them again; the summaries are deleted.`;
}

/** What a confirmed /forget did. */
function hiddenText(done: { events: number; memoryEntries: number; words: string }): string {
  const quoted = `“${escapeHtml(done.words)}”`;
  if (done.events === 0) {
    return `🙈 Deleted ${plural(done.memoryEntries, "summary", "summaries")} with all of ${quoted} from my memory files.`;
  }
  const deleted = done.memoryEntries > 0 ? `, and deleted ${summaries(done.memoryEntries)}` : "";
  return `🙈 Hid ${plural(done.events, "message")} with all of ${quoted} from my recall${deleted}.`;
}

/**
 * /memory shows the profile of the chat's recall scope with a button to delete each entry;
 * `/forget <words>` removes the matching entries and offers to hide the matching messages from
 * recall (src/recall/ does the work; this only speaks Telegram).
 */
export function memoryComposer(deps: MemoryCommandDeps): Composer<TurnContext> {
  const { profiles, forgetting, delivery } = deps;
  const composer = new Composer<TurnContext>();
  /** The scope of the chat a button was pressed in. */
  const scopeOfButton = (ctx: TurnContext) =>
    ctx.callbackQuery?.message ? scopeKeyOf(ctx.conversation) : undefined;
  const send = (
    ctx: TurnContext & { chat: { id: number } },
    html: string,
    keyboard?: InlineKeyboard,
  ) => sendListing(ctx.api, { chatId: ctx.chat.id, threadId: ctx.thread }, html, keyboard);

  composer.command("memory", async (ctx) => {
    const view = profileView(await profiles.list(scopeKeyOf(ctx.conversation)));
    await ctx.lease.ensureHeld();
    await send(ctx, view.html, view.keyboard);
  });

  composer.callbackQuery(DELETE_DATA, async (ctx) => {
    const scope = scopeOfButton(ctx);
    if (scope === undefined) return;
    await ctx.lease.ensureHeld();
    const gone = await profiles.remove(scope, Number(ctx.match[1]));
    await ctx.answerCallbackQuery({
      text: gone ? `Forgotten: ${truncate(gone.fact, 150)}` : "That fact is gone already",
    });
    // Unchanged, the list would be refused as "message is not modified".
    if (!gone) return;
    const view = profileView(await profiles.list(scope));
    const { message } = ctx.callbackQuery;
    if (!message) return;
    await editListing(
      ctx.api,
      { chatId: message.chat.id, threadId: ctx.thread, message, title: PROFILE_TITLE },
      view.html,
      view.keyboard,
    );
  });

  composer.command("forget", async (ctx) => {
    const words = ctx.match.trim();
    if (words === "") {
      await delivery.sendHtml(
        ctx.chat.id,
        "Usage: /forget &lt;words&gt; removes the facts with all these words from what I remember (/memory), and offers to hide the messages that have them from my recall and to delete the summaries in my memory files that have them.",
        ctx.thread,
      );
      return;
    }
    await ctx.lease.ensureHeld();
    const asked = await forgetting.ask(scopeKeyOf(ctx.conversation), words);
    const quoted = `“${escapeHtml(words)}”`;
    const lines =
      asked.removed.length > 0
        ? [
            `🗑 Removed from what I remember: ${asked.removed.map((e) => escapeHtml(e.fact)).join("; ")}`,
          ]
        : [`No fact I remember has all of ${quoted}.`];
    if (asked.requestId === undefined) {
      lines.push(`No stored message or summary has all of ${quoted} either.`);
      await send(ctx, lines.join("\n"));
      return;
    }
    lines.push(offerText(asked, quoted));
    await send(
      ctx,
      lines.join("\n"),
      InlineKeyboard.from([
        [InlineKeyboard.text("🙈 Hide them from recall", `forget:yes:${asked.requestId}`)],
      ]),
    );
  });

  composer.callbackQuery(CONFIRM_DATA, async (ctx) => {
    const scope = scopeOfButton(ctx);
    if (scope === undefined) return;
    await ctx.lease.ensureHeld();
    const done = await forgetting.confirm(scope, Number(ctx.match[1]));
    if (done.status === "unknown") {
      await ctx.answerCallbackQuery({ text: "This request is not known here" });
      return;
    }
    const html =
      done.status === "hidden"
        ? hiddenText(done)
        : `🙈 The messages with all of “${escapeHtml(done.words)}” were hidden before.`;
    await ctx.answerCallbackQuery({ text: done.status === "hidden" ? "Hidden" : "Hidden before" });
    await ctx.editMessageText(html, { parse_mode: "HTML" });
  });

  return composer;
}
