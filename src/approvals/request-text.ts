import type { ApprovalStatus } from "../db/schema.js";
import { truncate } from "../session/event-text.js";

// Arguments are shown, not kept: enough to judge the call, short enough for a phone.
const MAX_ARGS_CHARS = 1_200;

/** A call's arguments as a request shows them, in Telegram and in the terminal alike. */
export function shownArguments(args: Record<string, unknown>): string {
  return truncate(JSON.stringify(args, null, 2), MAX_ARGS_CHARS);
}

/** The first line of a request, before its arguments; `tool` as the place shows it (HTML or plain). */
export const requestTitle = (tool: string) => `🔐 Koroku wants to run ${tool}:`;

/** How an ended request reads. */
export const ENDINGS: Record<ApprovalStatus, string> = {
  pending: "",
  allowed: "✅ Allowed once",
  always: "✅ Always allowed here",
  denied: "🚫 Denied",
  expired: "⌛ Not answered in time: not run",
  cancelled: "⏹ Stopped",
  superseded: "↪️ Not answered: a new message came first",
};
