import { describe, expect, it } from "vitest";
import { conversationKeyOf } from "../../src/telegram/topics.js";

const PRIVATE = { id: 42, type: "private", first_name: "A" } as const;
const FORUM = { id: -1001234, type: "supergroup", title: "F", is_forum: true } as const;

describe("conversation keys", () => {
  it("is the chat for a chat without topics, a forum's General topic and a reply thread", () => {
    expect(conversationKeyOf({ chat: PRIVATE })).toBe("42");
    expect(conversationKeyOf({ chat: FORUM })).toBe("-1001234");
    // A reply thread of a supergroup has a thread id but is no topic.
    expect(
      conversationKeyOf({ chat: { ...FORUM, is_forum: undefined }, message_thread_id: 9 }),
    ).toBe("-1001234");
  });

  it("is chat and topic for a topic message, in a forum and in a private chat", () => {
    expect(conversationKeyOf({ chat: FORUM, is_topic_message: true, message_thread_id: 7 })).toBe(
      "-1001234:7",
    );
    expect(conversationKeyOf({ chat: PRIVATE, is_topic_message: true, message_thread_id: 3 })).toBe(
      "42:3",
    );
  });
});
