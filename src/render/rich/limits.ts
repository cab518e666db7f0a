/**
 * The limits of one rich message, from @grammyjs/types rich.d.ts (Bot API 10.1, "Rich Message
 * Limits"). How each is counted here is our reading, chosen so that a message within it is within
 * any reasonable reading of Telegram's (see docs/rich-messages.md).
 */
export const RICH_LIMITS = {
  /**
   * "UTF-8 characters" of text, formula source included. Telegram counts UTF-16 units, and the
   * line breaks between blocks too (it refused 32,939 of them where the breaks were left out).
   */
  chars: 32_768,
  /** Blocks, nested ones, list items and table rows included. */
  blocks: 500,
  /** Levels of nested formatting and blocks. */
  nesting: 16,
  /** Media attachments: Koroku's answers carry none (images stay links). */
  media: 50,
  tableColumns: 20,
} as const;

export interface RichBudget {
  readonly chars: number;
  readonly blocks: number;
}

/**
 * What an answer's messages are packed to: Telegram's characters less a margin for what the
 * documentation leaves open (list labels, a break between paragraphs counted as two), so that a
 * message the split counts as within the limit is never refused as too long.
 */
export const RICH_MARGIN_CHARS = 2_048;

export const RICH_BUDGET: RichBudget = {
  chars: RICH_LIMITS.chars - RICH_MARGIN_CHARS,
  blocks: RICH_LIMITS.blocks,
};
