import { Api } from "grammy";
import type { Message } from "grammy/types";
import { describe, expect, it } from "vitest";
import { turnContext } from "../../src/telegram/turn-context.js";
import { buildTextUpdate, DEFAULT_FAKE_TOKEN } from "../fakes/telegram.js";
import { botFromToken } from "../fakes/telegram-objects.js";
import { buttonPress } from "../helpers/bot.js";
import { heldLease } from "../helpers/lease.js";

const USER = 4242;
const FORUM = -1009876;
const me = botFromToken(DEFAULT_FAKE_TOKEN);
// Never called: the context is only made.
const api = new Api(DEFAULT_FAKE_TOKEN);
// No handler runs: nothing is left to answer.
const noAnswer = () => {};
const inTopic = (id: number, text: string, threadId: number) =>
  buildTextUpdate({ updateId: id, messageId: id, text, userId: USER, chatId: FORUM, threadId });

describe("the context of an update the inbox hands the bot", () => {
  it("carries the update's lease, its conversation and its topic", () => {
    const update = inTopic(1, "@koroku_test_bot hello", 7);
    const lease = heldLease(update);
    const ctx = turnContext(update, api, me, lease, new Set([USER]), noAnswer);
    expect(ctx?.lease).toBe(lease);
    expect(ctx?.conversation).toBe(`${FORUM}:7`);
    expect(ctx?.thread).toBe(7);
  });

  it("takes a button's conversation and topic from the message it is on", () => {
    const asked = inTopic(2, "/tasks", 3).message as Message;
    const update = buttonPress(3, USER, asked, "tasks:cancel:1");
    const ctx = turnContext(update, api, me, heldLease(update), new Set([USER]), noAnswer);
    expect(ctx).toMatchObject({ conversation: `${FORUM}:3`, thread: 3 });
  });

  it("is not made for a sender the allowlist no longer lets in", () => {
    const update = buildTextUpdate({ updateId: 4, messageId: 12, text: "hi", userId: USER });
    expect(
      turnContext(update, api, me, heldLease(update), new Set([USER + 1]), noAnswer),
    ).toBeUndefined();
    expect(
      turnContext(update, api, me, heldLease(update), new Set([USER]), noAnswer)?.conversation,
    ).toBe(String(USER));
  });
});
