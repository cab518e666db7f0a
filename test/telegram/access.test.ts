import type { Update } from "grammy/types";
import { describe, expect, it } from "vitest";
import { routeUpdate } from "../../src/telegram/access.js";

const BOT = { id: 7000000001, username: "koroku_test_bot" };
const ANN = { id: 11, is_bot: false, first_name: "Ann" };
const PRIVATE = { id: 11, type: "private", first_name: "Ann" } as const;

const update = (message: Record<string, unknown>) =>
  ({
    update_id: 1,
    message: { message_id: 10, date: 1, chat: PRIVATE, from: ANN, ...message },
  }) as unknown as Update;

describe("routeUpdate", () => {
  it("runs a rich message someone forwarded (a bot's answer), and ignores a service message", () => {
    const rich = { blocks: [{ type: "paragraph", text: "moved to Friday" }] };
    const origin = {
      type: "user",
      sender_user: { ...BOT, is_bot: true, first_name: "K" },
      date: 1,
    };
    const allowed = new Set([ANN.id]);
    expect(
      routeUpdate(update({ forward_origin: origin, rich_message: rich }), allowed, BOT),
    ).toMatchObject({ action: "run" });
    expect(
      routeUpdate(
        update({ pinned_message: { message_id: 3, date: 1, chat: PRIVATE } }),
        allowed,
        BOT,
      ),
    ).toMatchObject({ action: "ignore" });
  });
});
