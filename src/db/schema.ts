import type { ColumnType, Generated, Insertable, Selectable } from "kysely";

/**
 * Every table Koroku stores, typed once for Kysely. Integers that may pass 2^31 (ids, Telegram
 * update ids, epoch milliseconds) are BIGINT in PostgreSQL, which `pg` returns as strings unless
 * told otherwise; src/db/connect.ts parses them back to numbers so both databases yield the same types.
 */
export interface MessagesTable {
  id: Generated<number>;
  chat_id: string;
  /**
   * The recall scope of the conversation (src/recall/area.ts's scopeKeyOf): what search_history
   * looks through together.
   */
  scope: string;
  kind: "session" | "compaction";
  /** 'user' | 'model' for session events, null for compactions. */
  role: string | null;
  /** The zod-validated event (src/session/events.ts), as JSON text. */
  event_json: string;
  /** 1 when this is a message a person typed (not a function-response turn): turns start here. */
  is_user_message: ColumnType<number, number | undefined, number>;
  /** Tool calls actually executed by this function-response event (the guardrail counts these). */
  tool_calls: ColumnType<number, number | undefined, number>;
  /** Gemini's usageMetadata.promptTokenCount for the request that produced this model event. */
  prompt_tokens: number | null;
  /** Rough size of this event in tokens (characters / 4), for the budget between two measurements. */
  estimated_tokens: number;
  /**
   * Plain text of the event (src/session/event-text.ts), which search_history finds and quotes.
   * Indexed by the database: SQLite's FTS5 table messages_fts, PostgreSQL's generated
   * `search_tsv` column (neither is typed here: only src/recall/keyword-search.ts reads them, in SQL).
   */
  search_text: string;
  /** The Telegram update this event answers, when it came from one. */
  update_id: number | null;
  /** For compactions: the inclusive id range of the session events the summary replaces. */
  covers_from_id: number | null;
  covers_to_id: number | null;
  created_at: string;
  /** When a confirmed /forget hid this event from recall; the row stays (src/recall/forgetting.ts). */
  forgotten_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export type InboxStatus = "pending" | "running" | "done" | "failed";

export interface InboxTable {
  update_id: number;
  /** Updates of one chat run one at a time in update_id order; null for updates without a chat. */
  chat_id: string | null;
  update_json: string;
  status: InboxStatus;
  attempts: ColumnType<number, number | undefined, number>;
  /** Epoch ms until which the replica in `claimed_by` owns this running update. */
  lease_until: number | null;
  claimed_by: string | null;
  error: string | null;
  received_at: string;
  finished_at: string | null;
  /**
   * Messages of the answer that reached Telegram while the update runs: the files the model made
   * first, then the messages of its words.
   */
  delivered: ColumnType<number, number | undefined, number>;
  /** The Telegram album the update's message belongs to: its items run as one turn. */
  media_group_id: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * The update whose turn took this one in (an album's item, then done); on that update itself
   * once the album's items are fixed.
   */
  merged_into: ColumnType<number | null, number | null | undefined, number | null>;
  /**
   * JSON array of the message ids the answer was shown in while written (edit mode), so that a
   * run after a crash edits them instead of sending the answer again; null when none.
   */
  live_messages: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * JSON array of the files tools sent while the update ran (src/agent/tool-files.ts), each with
   * its call and what the call answered, so that a run after a crash does not send them again;
   * null when none.
   */
  tool_files: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 once a stop reached another replica than the one running the update (see replica-stops). */
  stop_requested: ColumnType<number, number | undefined, number>;
}

/** A topic /new opened, until its first message names it. */
export interface PendingTopicNamesTable {
  /** The topic's conversation key, `<chat_id>:<thread_id>`. */
  conversation: string;
  created_at: string;
}

/** The bytes of a file, once per content (see migrations/20261202020000_attachments.ts). */
export interface AttachmentsTable {
  /** Hex SHA-256 of `data`. */
  sha256: string;
  mime_type: string;
  size: number;
  data: Buffer;
  created_at: string;
}

/** Which conversation holds which attachment, under which file name. */
export interface AttachmentUsesTable {
  chat_id: string;
  sha256: string;
  file_name: string | null;
  created_at: string;
}

export type TaskStatus = "active" | "done" | "cancelled" | "disabled";
/** `remind` sends the instruction as it is; `run` gives it to the model as a turn. */
export type TaskMode = "remind" | "run";

export interface TasksTable {
  id: Generated<number>;
  /** The conversation key the task belongs to and runs in (src/telegram/ derives it). */
  conversation: string;
  /** Where its answers go: the chat, and the forum topic of the conversation if it has one. */
  chat_id: string;
  thread_id: number | null;
  instruction: string;
  mode: TaskMode;
  /** The repetition as the model asked for it, for lists; null for a one-shot task. */
  repeat_text: string | null;
  /** A 5-field cron expression read in `time_zone`, or an interval from `anchor_at`. */
  cron: string | null;
  interval_ms: number | null;
  anchor_at: number | null;
  time_zone: string;
  /** Epoch ms of the next run still to queue; null once the task is no longer active. */
  next_run_at: number | null;
  status: TaskStatus;
  /** Why a task was disabled (its conversation was cleared, its chat blocked the bot). */
  status_reason: string | null;
  runs: ColumnType<number, number | undefined, number>;
  created_at: string;
  /**
   * Who set the task up: the sender id ALLOWED_USER_IDS judged (a user, or a group or channel
   * posting anonymously); null for a group's task from before it was recorded.
   */
  created_by: ColumnType<number | null, number | null | undefined, number | null>;
}

/** One row per queued run: the unique (task_id, due_at) pair is what keeps a run from queueing twice. */
export interface TaskRunsTable {
  id: Generated<number>;
  task_id: number;
  due_at: number;
  queued_at: string;
}

/** One Gemini call's tokens (see migrations/20261202040000_model_usage.ts). */
export interface ModelUsageTable {
  /** The conversation key. */
  chat_id: string;
  model: string;
  /** Cached tokens included. */
  prompt_tokens: number;
  cached_tokens: number;
  /** Thinking included. */
  output_tokens: number;
  thoughts_tokens: number;
  created_at: string;
}

/**
 * An attachment's copy in Gemini's Files API (see migrations/20261203040000_gemini_files.ts).
 */
export interface GeminiFilesTable {
  /** The attachment's hex SHA-256. */
  sha256: string;
  /**
   * `files/…`; null when Gemini could not take the file (`failure` says why). With the failure
   * "still processing", an upload Gemini had not finished, asked after at `expires_at`.
   */
  name: string | null;
  /** What a fileData part names; null when `name` is. */
  uri: string | null;
  mime_type: string;
  /** ISO time Gemini deletes the file (a failure is tried again after it, too). */
  expires_at: string;
  failure: string | null;
  created_at: string;
}

/** One durable fact of a recall scope's profile (src/recall/profile.ts). */
export interface ProfileEntriesTable {
  id: Generated<number>;
  /** scopeName() of the recall scope. */
  scope: string;
  fact: string;
  created_at: string;
}

/** A /forget waiting for its confirmation button (src/recall/forgetting.ts). */
export interface ForgetRequestsTable {
  id: Generated<number>;
  scope: string;
  words: string;
  created_at: string;
  done_at: string | null;
}

/** An event waiting to be embedded (src/recall/embedding-queue.ts). */
export interface EmbeddingQueueTable {
  message_id: number;
  /** Epoch ms until which `claimed_by` holds the item; null while it waits. */
  lease_until: number | null;
  claimed_by: string | null;
  attempts: ColumnType<number, number | undefined, number>;
}

/** How far the embedding queue has taken in `messages` (row `cursor`). */
export interface EmbeddingProgressTable {
  name: string;
  last_id: number;
  /** The model the stored vectors were made with; null until a start has checked them. */
  model: ColumnType<string | null, string | null | undefined, string | null>;
}

/**
 * One vector per chunk of an event: float32 little-endian bytes on SQLite, `real[]` on
 * PostgreSQL (src/recall/vector-search.ts reads both).
 */
export interface EmbeddingsTable {
  id: Generated<number>;
  message_id: number;
  scope: string;
  chunk: number;
  model: string;
  /**
   * Read: the bytes (SQLite) or the numbers (PostgreSQL). Written: the bytes, or the array as
   * PostgreSQL's text literal (`{0.1,-0.2,…}`).
   */
  embedding: ColumnType<Buffer | number[], Buffer | string, Buffer | string>;
}

/** A conversation's `/voice` setting (see migrations/20261203150000_conversation_voice.ts). */
export interface ConversationVoiceTable {
  /** The conversation key. */
  chat_id: string;
  /** "auto", "always" or "off". */
  mode: string;
  updated_at: string;
}

export type ApprovalStatus =
  | "pending"
  | "allowed"
  | "always"
  | "denied"
  | "expired"
  | "cancelled"
  | "superseded";

/** A tool call waiting for (or given) the user's yes (src/approvals/). */
export interface ToolApprovalsTable {
  id: Generated<number>;
  conversation: string;
  /** Where the request's message went: the chat, and its forum topic. */
  chat_id: string;
  thread_id: number | null;
  /** The recall scope an "always" grant is remembered for. */
  scope: string;
  /** The stored model event whose call this is (messages.id), and the call's place in it. */
  event_id: number;
  call_index: number;
  tool: string;
  args_json: string;
  /** Whose turn it is: they (or a group's admin) may answer. */
  asked_by: number | null;
  status: ApprovalStatus;
  /** The message with the buttons, once sent. */
  message_id: number | null;
  created_at: string;
  /** Epoch ms after which a pending request counts as denied. */
  expires_at: number;
  decided_at: string | null;
  decided_by: number | null;
  /** 1 once the allowed call began to run: a run after a crash must not run it again. */
  started: ColumnType<number, number | undefined, number>;
}

/** "Always allow": a tool that runs without asking in one recall scope. */
export interface ToolGrantsTable {
  id: Generated<number>;
  scope: string;
  tool: string;
  granted_by: number | null;
  created_at: string;
}

export interface Database {
  messages: MessagesTable;
  inbox: InboxTable;
  pending_topic_names: PendingTopicNamesTable;
  attachments: AttachmentsTable;
  attachment_uses: AttachmentUsesTable;
  tasks: TasksTable;
  task_runs: TaskRunsTable;
  model_usage: ModelUsageTable;
  gemini_files: GeminiFilesTable;
  profile_entries: ProfileEntriesTable;
  forget_requests: ForgetRequestsTable;
  embedding_queue: EmbeddingQueueTable;
  embedding_progress: EmbeddingProgressTable;
  embeddings: EmbeddingsTable;
  conversation_voice: ConversationVoiceTable;
  tool_approvals: ToolApprovalsTable;
  tool_grants: ToolGrantsTable;
}

export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Insertable<MessagesTable>;
export type TaskRow = Selectable<TasksTable>;
