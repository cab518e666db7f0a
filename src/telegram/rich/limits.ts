/**
 * The limits of one rich message, from @grammyjs/types rich.d.ts (Bot API 10.1, "Rich Message
 * Limits"). How each is counted here is our reading, chosen so that a message within it is within
 * any reasonable reading of Telegram's (see docs/rich-messages.md).
 */
export const RICH_LIMITS = {
  /** "UTF-8 characters" of text, formula source included; counted here in UTF-16 units (≥). */
  chars: 32_768,
  /** Blocks, nested ones, list items and table rows included. */
  blocks: 500,
  /** Levels of nested formatting and blocks together. */
  nesting: 16,
  /** Media attachments: Koroku's answers carry none (images stay links). */
  media: 50,
  tableColumns: 20,
} as const;

export interface RichBudget {
  readonly chars: number;
  readonly blocks: number;
}
