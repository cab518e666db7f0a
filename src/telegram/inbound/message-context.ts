import type { Chat, Message, MessageOrigin, User } from "grammy/types";
import { truncate } from "../../session/event-text.js";
import { richMessageText } from "./rich-text.js";

/** A quoted message is context, not the message itself: a few lines are enough. */
export const QUOTE_MAX_CHARS = 300;

type BotIdentity = { id: number; username: string };

const nameOf = (user: Pick<User, "first_name" | "last_name" | "id">) =>
  [user.first_name, user.last_name].filter(Boolean).join(" ") || `user ${user.id}`;

const chatTitle = (chat: Chat) =>
  chat.title ?? ([chat.first_name, chat.last_name].filter(Boolean).join(" ") || `chat ${chat.id}`);

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

function originText(origin: MessageOrigin): string {
  switch (origin.type) {
    case "user":
      return nameOf(origin.sender_user);
    case "hidden_user":
      return `${origin.sender_user_name} (a hidden account)`;
    case "chat":
      return `the chat “${chatTitle(origin.sender_chat)}”`;
    case "channel":
      return `the channel “${chatTitle(origin.chat)}”`;
  }
}

const day = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().slice(0, 10);

/**
 * What the message answers: the part the user quoted when there is one, else the replied-to
 * message's text or caption, cut short; and whose message it was. In a topic, a message that
 * replies to nothing carries the topic's creation as its reply_to_message: that is no reply.
 */
function replyLine(message: Message, bot: BotIdentity): string | undefined {
  const reply = message.reply_to_message;
  const external = message.external_reply;
  if (reply?.forum_topic_created) return undefined;
  if (!reply && !external) return undefined;
  const quoted =
    message.quote?.text ??
    reply?.text ??
    reply?.caption ??
    (reply?.rich_message ? richMessageText(reply.rich_message) : undefined);
  // A channel's post or an anonymous admin's message comes "from" a service account (Telegram,
  // GroupAnonymousBot); its sender_chat is who said it.
  const whose = reply
    ? reply.from?.id === bot.id
      ? "your own earlier message"
      : `a message from ${reply.sender_chat ? chatTitle(reply.sender_chat) : reply.from ? nameOf(reply.from) : "someone"}`
    : `a message from ${originText((external as NonNullable<typeof external>).origin)} in another chat`;
  if (quoted === undefined || oneLine(quoted) === "") return `[In reply to ${whose}, without text]`;
  const kind = message.quote ? "quoting" : "which said";
  return `[In reply to ${whose}, ${kind}: “${truncate(oneLine(quoted.toWellFormed()), QUOTE_MAX_CHARS)}”]`;
}

/**
 * The bot's @name taken out of a group message with the spaces it leaves: "hey @bot there" is
 * "hey there", "@bot, hi" is "hi"; other spacing (indented code, say) stays as written.
 */
export function withoutMention(text: string, username: string): string {
  const name = username.replace(/[^A-Za-z0-9_]/g, "");
  const mention = new RegExp(`[ \\t]*@${name}\\b[ \\t]*`, "gi");
  return text
    .replace(mention, (found, at: number, whole: string) => {
      const before = whole[at - 1];
      const after = whole[at + found.length];
      // Between two words one space stays; at a line's edge or before punctuation none.
      const edge = before === undefined || before === "\n" || after === undefined || after === "\n";
      return edge || /[\p{P}]/u.test(after) ? "" : " ";
    })
    .replace(/^[,:;]\s*/, "")
    .trim();
}

/**
 * The user turn the model reads for a Telegram message: who speaks (in groups), where a
 * forward comes from, which bot it came through, what it replies to, then the words.
 */
export function modelText(
  message: Message,
  bot: BotIdentity,
  group: boolean,
  /** The words: a text message's text, a caption, or a line describing a location or poll. */
  words: string = message.text ?? "",
): string {
  const lines: string[] = [];
  if (message.forward_origin) {
    lines.push(
      `[Forwarded from ${originText(message.forward_origin)}, first sent ${day(message.forward_origin.date)}]`,
    );
  }
  if (message.via_bot) lines.push(`[Sent via @${message.via_bot.username ?? message.via_bot.id}]`);
  const reply = replyLine(message, bot);
  if (reply) lines.push(reply);
  const text = words.toWellFormed();
  const said = group ? withoutMention(text, bot.username) : text;
  if (said !== "") lines.push(said);
  const body = lines.join("\n");
  if (!group) return body;
  // An anonymous administrator speaks as the group (from is GroupAnonymousBot), a channel as itself.
  const speaker = message.sender_chat
    ? chatTitle(message.sender_chat)
    : message.from
      ? nameOf(message.from)
      : "someone";
  // The name reaches Gemini too, so it needs the same repair as the text.
  return `[${speaker.toWellFormed()}] ${body}`;
}
