import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isAbsolute, join } from "node:path";
import type {
  BotCommand,
  ChatMember,
  ForumTopic,
  InlineKeyboardMarkup,
  Message,
  Update,
  UserFromGetMe,
  WebhookInfo,
} from "grammy/types";
import { checkOggOpus, type OggOpusInfo } from "./ogg-opus-check.js";
import { validateTelegramHtml } from "./telegram-html.js";
import {
  botAsUser,
  botFromToken,
  buildTextUpdate,
  chatFor,
  type TextUpdateParams,
  unixNow,
} from "./telegram-objects.js";
import { type RichHtmlResult, validateRichHtml } from "./telegram-rich.js";
import {
  CAPTION_LIMIT,
  parseMultipart,
  photoDimensions,
  photoProblem,
  UPLOAD_MAX_BYTES,
  UploadedFile,
} from "./telegram-uploads.js";

export { type TelegramHtmlResult, validateTelegramHtml } from "./telegram-html.js";
export { buildTextUpdate, DEFAULT_USER_ID, type TextUpdateParams } from "./telegram-objects.js";
export { type RichHtmlResult, validateRichHtml } from "./telegram-rich.js";

/**
 * A strict, in-process fake of the Telegram Bot API for end-to-end tests, spoken to the way
 * grammY speaks: `POST {apiRoot}/bot<token>/<method>` with a JSON body. It records every call,
 * serves long polling from a queue the test fills, and rejects what Telegram would reject.
 */

export const TELEGRAM_TEXT_LIMIT = 4096;
export const DEFAULT_FAKE_TOKEN = "7000000001:AAFakeTelegramTokenForTestsOnly";

const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_WAIT_MS = 30_000;
/** The field of each file-sending method that holds the file. */
const FILE_FIELDS = { sendPhoto: "photo", sendDocument: "document", sendVoice: "voice" } as const;
const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

export type Params = Record<string, unknown>;

export type ApiResponse =
  | { readonly ok: true; readonly result: unknown }
  | {
      readonly ok: false;
      readonly error_code: number;
      readonly description: string;
      readonly parameters?: { readonly retry_after: number };
    };

export interface RecordedCall {
  readonly method: string;
  readonly body: Params;
  /** Date.now() when the request arrived. */
  readonly at: number;
  /** Set when answered; a long poll still waiting has none. */
  readonly response?: ApiResponse;
}

type CallRecord = { -readonly [K in keyof RecordedCall]: RecordedCall[K] };

export interface SentMessage {
  readonly message_id: number;
  readonly chat_id: number;
  /** The text as sent: HTML when parse_mode is "HTML", and for a rich message its rich HTML. */
  readonly text: string;
  /** "HTML", undefined for plain text; a rich message (sendRichMessage) has "rich". */
  readonly parse_mode: string | undefined;
  /** The text as the user sees it. */
  readonly plain_text: string;
  readonly body: Params;
  readonly message: Message;
}

export interface SentFile {
  readonly method: "sendPhoto" | "sendDocument" | "sendVoice";
  readonly chat_id: number;
  readonly message_thread_id: number | undefined;
  /** The file's name as uploaded. */
  readonly file_name: string;
  readonly bytes: Buffer;
  /** The caption as the user sees it. */
  readonly caption: string | undefined;
  readonly message: Message;
}

export interface ScriptedFailure {
  readonly error_code: number;
  /** Defaults to Telegram's wording for the code. */
  readonly description?: string;
  /** Seconds; sent as parameters.retry_after (429 always carries it). */
  readonly retry_after?: number;
}

/**
 * What Telegram answers an edit that changes nothing, to script for a chosen call (the fake
 * answers it by itself only when the text is in fact unchanged).
 */
export const MESSAGE_NOT_MODIFIED: ScriptedFailure = {
  error_code: 400,
  description:
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
};

export interface WebhookState {
  readonly url: string;
  readonly secret_token: string | undefined;
}

export type UpdateInput = Omit<Update, "update_id"> & { readonly update_id?: number };

export type CallMatcher = string | ((call: RecordedCall) => boolean);

/** A call kept waiting, unanswered, the way a slow or stalled Telegram keeps it. */
export interface HeldCall {
  /** Resolves with the call once it has arrived and is being held. */
  readonly arrived: Promise<RecordedCall>;
  /** Lets the held call run; if its client hung up meanwhile, it is dropped without effect. */
  release(): void;
  /**
   * Resolves once the fake has seen the client hang up (a killed process's socket closes a little
   * after the process is seen to exit).
   */
  readonly hungUp: Promise<void>;
}

export interface FakeTelegram {
  /** Pass as grammY's `client.apiRoot`. */
  readonly apiRoot: string;
  readonly token: string;
  readonly bot: UserFromGetMe;
  readonly calls: readonly RecordedCall[];
  /** Successful sendMessage and sendRichMessage calls, in order. */
  readonly sent: readonly SentMessage[];
  /** Successful sendMessageDraft and sendRichMessageDraft calls, in order. */
  readonly drafts: readonly DraftShown[];
  /** Successful editMessageText calls, in order (`sent` holds each message's latest text). */
  readonly edits: readonly SentMessage[];
  /** Photos, documents and voice notes the bot sent (sendPhoto, sendDocument, sendVoice), in order, with their bytes. */
  readonly sentFiles: readonly SentFile[];
  /** Messages the bot deleted (deleteMessage). */
  readonly deleted: readonly { chat_id: number; message_id: number }[];
  /** The last setMyCommands list. */
  readonly commands: readonly BotCommand[];
  readonly webhook: WebhookState | undefined;
  /** Resolves with the first recorded call matching a method name or predicate. */
  waitFor(match: CallMatcher, timeoutMs?: number): Promise<RecordedCall>;
  /**
   * Queues an update for getUpdates; assigns the next update_id when none is given. Nothing
   * delivers it in webhook mode: post `buildTextUpdate(...)` to the service instead.
   */
  pushUpdate(update: UpdateInput): Update;
  /** Queues a text message from a user (a private chat unless chatId says otherwise). */
  pushText(params: Omit<TextUpdateParams, "updateId" | "messageId">): Update;
  /**
   * The user presses a draft's stop button: queues the stopped_message_generation update (for
   * polling) and returns it (to post to a webhook). `threadId`: the draft is in that topic of a
   * private chat with topics.
   */
  pressStop(chatId: number, draftId: number, threadId?: number): Update;
  /**
   * A user presses an inline button of a message the bot sent: queues the callback_query update
   * (for polling) and returns it (to post to a webhook). The button must be on the message's
   * current keyboard, as Telegram only sends what a user can press.
   */
  pressButton(chatId: number, messageId: number, data: string, userId: number): Update;
  /** The next `times` calls of `method` fail with this error instead of running. */
  failNext(method: string, failure: ScriptedFailure, times?: number): void;
  /**
   * The next call of `method` is held open until released. If the client disconnects first (say
   * it was killed), the call has no effect: a message held this way was never sent.
   */
  holdNext(method: string): HeldCall;
  /**
   * Makes a supergroup a forum the bot is a member of; with `botCanManageTopics` the bot is an
   * administrator allowed to create and rename topics there.
   */
  addForum(chatId: number, options?: { botCanManageTopics?: boolean }): void;
  /**
   * A user's standing in a group, as getChatMember answers it; anyone not set has "left" (the
   * bot itself is an administrator everywhere the fake sends to).
   */
  setMemberStatus(
    chatId: number,
    userId: number,
    status: "creator" | "administrator" | "member",
  ): void;
  /** The topics the bot created (createForumTopic), with their current names, by chat. */
  topicsOf(chatId: number): ReadonlyMap<number, string>;
  /**
   * Makes a file the bot can fetch with getFile and download under `/file/bot<token>/<path>`, as
   * a user's photo or document would be. With `localDir` (a local Bot API server in --local
   * mode) getFile answers with an absolute path under it, where the file is written instead.
   * With `sizeUnknown` getFile leaves out file_size, as the Bot API may.
   */
  addFile(bytes: Uint8Array, options?: { localDir?: string; sizeUnknown?: boolean }): FileRef;
  /** Forgets a file added with addFile (a benchmark's thousands of photos would fill this process). */
  removeFile(fileId: string): void;
  /** Downloads of files the fake served, by file_path. */
  readonly downloads: readonly string[];
  /** The next `times` file downloads fail with this HTTP status (a flaky file server). */
  failNextDownload(status: number, times?: number): void;
  /**
   * The next file download sends its headers and its first `bytes` bytes, then nothing more (a
   * stalled file server); the connection stays open until the client gives up.
   */
  stallNextDownload(bytes: number): void;
  /**
   * Drops the recorded calls and messages: a benchmark's thousands would burden this process. A
   * message forgotten can no longer be edited or deleted.
   */
  forgetCalls(): void;
  close(): Promise<void>;
}

export interface DraftShown {
  readonly chat_id: number;
  readonly draft_id: number;
  readonly plain_text: string;
  /** A rich draft's (sendRichMessageDraft) rich HTML; absent for sendMessageDraft. */
  readonly rich_html?: string;
  readonly at: number;
}

/** Drafts a chat may get per second before Telegram answers 429. */
export const DRAFTS_PER_SECOND = 5;

/** Telegram's limit on files a bot may download through the cloud Bot API. */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

export interface FileRef {
  readonly file_id: string;
  readonly file_unique_id: string;
  readonly file_size: number;
}

export interface FakeTelegramOptions {
  readonly token?: string;
  /** Drafts one chat may get in any second (Telegram: about 5); more get a 429. */
  readonly draftsPerSecond?: number;
  /** The bot has topics in private chats (BotFather's threaded mode, Bot API 9.4+). */
  readonly topicsInPrivateChats?: boolean;
}

export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const fake = new FakeTelegramServer(
    options.token ?? DEFAULT_FAKE_TOKEN,
    options.draftsPerSecond ?? DRAFTS_PER_SECOND,
  );
  if (options.topicsInPrivateChats) {
    fake.bot.has_topics_enabled = true;
    fake.bot.allows_users_to_create_topics = true;
  }
  await fake.listen();
  return fake;
}

/** A request Telegram refuses; the dispatcher turns it into `{ok:false}`. */
class ApiError extends Error {
  constructor(
    readonly errorCode: number,
    readonly description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }
}

function badRequest(reason: string): ApiError {
  return new ApiError(400, `Bad Request: ${reason}`);
}

interface PendingPoll {
  readonly limit: number;
  finish(response: ApiResponse): void;
}

interface Waiter {
  readonly matches: (call: RecordedCall) => boolean;
  readonly resolve: (call: RecordedCall) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

type Handler = (params: Params, signal: AbortSignal) => ApiResponse | Promise<ApiResponse>;

class FakeTelegramServer implements FakeTelegram {
  readonly bot: UserFromGetMe;
  readonly calls: RecordedCall[] = [];
  readonly sent: SentMessage[] = [];
  readonly drafts: DraftShown[] = [];
  readonly edits: SentMessage[] = [];
  readonly deleted: { chat_id: number; message_id: number }[] = [];
  readonly sentFiles: SentFile[] = [];
  commands: BotCommand[] = [];
  webhook: WebhookState | undefined;
  readonly downloads: string[] = [];
  private readonly files = new Map<
    string,
    { bytes: Uint8Array; path: string; size: number; sizeUnknown: boolean }
  >();
  private nextFileId = 1;
  private downloadFailures: number[] = [];
  private downloadStalls: number[] = [];

  private readonly server: Server;
  private readonly handlers: ReadonlyMap<string, Handler>;
  private readonly failures = new Map<string, ScriptedFailure[]>();
  private readonly holds = new Map<string, Hold[]>();
  private readonly polls = new Set<PendingPoll>();
  private readonly waiters = new Set<Waiter>();
  private readonly forums = new Map<number, { botCanManageTopics: boolean }>();
  private readonly members = new Map<string, "creator" | "administrator" | "member">();
  private readonly topics = new Map<number, Map<number, string>>();
  private nextThreadId = 5_000;
  private queue: Update[] = [];
  private nextUpdateId = 100_000_001;
  private nextMessageId = 1;
  private nextCallbackQueryId = 1;
  private port = 0;
  /** When each chat's recent drafts came, for the per-second limit. */
  private readonly draftTimes = new Map<number, number[]>();

  constructor(
    readonly token: string,
    private readonly draftsPerSecond: number,
  ) {
    this.bot = botFromToken(token);
    this.server = createServer((req, res) => {
      this.handleRequest(req, res).catch((error: unknown) => {
        respond(res, {
          ok: false,
          error_code: 500,
          description: `fake Telegram crashed: ${error}`,
        });
      });
    });
    // As the fake Gemini: Node closes a connection idle for 5 s, and a busy service's next call
    // on it (a getFile, a file download) then reads "connection closed by the other side".
    this.server.keepAliveTimeout = 60_000;
    const handlers: Record<string, Handler> = {
      getme: () => ok(this.bot),
      createforumtopic: (params) => ok(this.createForumTopic(params)),
      editforumtopic: (params) => ok(this.editForumTopic(params)),
      sendmessage: (params) => ok(this.sendMessage(params)),
      sendmessagedraft: (params) => ok(this.sendMessageDraft(params)),
      editmessagetext: (params) => ok(this.editMessageText(params)),
      deletemessage: (params) => ok(this.deleteMessage(params)),
      sendrichmessage: (params) => ok(this.sendRichMessage(params)),
      sendphoto: (params) => ok(this.sendFile("sendPhoto", params)),
      senddocument: (params) => ok(this.sendFile("sendDocument", params)),
      sendvoice: (params) => ok(this.sendFile("sendVoice", params)),
      sendrichmessagedraft: (params) => ok(this.sendRichMessageDraft(params)),
      sendchataction: (params) => ok(this.sendChatAction(params)),
      answercallbackquery: (params) => ok(answerCallbackQuery(params)),
      setmycommands: (params) => ok(this.setMyCommands(params)),
      getmycommands: () => ok(this.commands),
      deletemycommands: () => ok(this.setCommands([])),
      setwebhook: (params) => ok(this.setWebhook(params)),
      deletewebhook: (params) => ok(this.deleteWebhook(params)),
      getwebhookinfo: () => ok(this.webhookInfo()),
      getupdates: (params, signal) => this.getUpdates(params, signal),
      getfile: (params) => ok(this.getFile(params)),
      getchatmember: (params) => ok(this.getChatMember(params)),
    };
    this.handlers = new Map(Object.entries(handlers));
  }

  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    const address = this.server.address();
    if (address === null || typeof address === "string") {
      throw new Error("fake Telegram: expected a TCP address after listen()");
    }
    this.port = address.port;
  }

  waitFor(match: CallMatcher, timeoutMs = DEFAULT_WAIT_MS): Promise<RecordedCall> {
    const matches =
      typeof match === "string" ? (call: RecordedCall) => call.method === match : match;
    const found = this.calls.find(matches);
    if (found) return Promise.resolve(found);
    const wanted = typeof match === "string" ? `"${match}" call` : "call matching the predicate";
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        matches,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(
            new Error(
              `fake Telegram: no ${wanted} within ${timeoutMs} ms. Recorded calls:\n${this.describeCalls()}`,
            ),
          );
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  pushUpdate(input: UpdateInput): Update {
    const update: Update = { ...input, update_id: input.update_id ?? this.nextUpdateId };
    this.nextUpdateId = Math.max(this.nextUpdateId, update.update_id + 1);
    this.queue.push(update);
    for (const poll of this.polls) poll.finish(ok(this.queue.slice(0, poll.limit)));
    return update;
  }

  pushText(params: Omit<TextUpdateParams, "updateId" | "messageId">): Update {
    const messageId = this.nextMessageId++;
    return this.pushUpdate(buildTextUpdate({ ...params, updateId: this.nextUpdateId, messageId }));
  }

  failNext(method: string, failure: ScriptedFailure, times = 1): void {
    const key = method.toLowerCase();
    const queued = this.failures.get(key) ?? [];
    queued.push(...Array.from({ length: times }, () => failure));
    this.failures.set(key, queued);
  }

  holdNext(method: string): HeldCall {
    const hold = new Hold();
    const key = method.toLowerCase();
    this.holds.set(key, [...(this.holds.get(key) ?? []), hold]);
    return hold;
  }

  addForum(chatId: number, options: { botCanManageTopics?: boolean } = {}): void {
    if (chatFor(chatId).type !== "supergroup") {
      throw new Error(`fake Telegram: only supergroups ("-100…" ids) can be forums, not ${chatId}`);
    }
    this.forums.set(chatId, { botCanManageTopics: options.botCanManageTopics ?? false });
  }

  setMemberStatus(
    chatId: number,
    userId: number,
    status: "creator" | "administrator" | "member",
  ): void {
    if (chatFor(chatId).type === "private") {
      throw new Error("fake Telegram: a private chat has no members to set");
    }
    this.members.set(`${chatId}/${userId}`, status);
  }

  /**
   * As Telegram answers it: a user_id is required and must be an Integer; in a private chat only
   * its own user is found; in a group anyone the fake was not told of has left.
   */
  private getChatMember(params: Params): ChatMember {
    const chatId = readChatId(params);
    const userId = readInteger(params, "user_id");
    if (userId === undefined || userId <= 0) throw badRequest("invalid user_id specified");
    const user = { id: userId, is_bot: false, first_name: "Test User" };
    if (chatFor(chatId).type === "private") {
      if (userId !== chatId) throw badRequest("user not found");
      return { status: "member", user };
    }
    const status = this.members.get(`${chatId}/${userId}`);
    if (status === "creator") return { status, user, is_anonymous: false };
    if (status === "administrator") {
      return {
        status,
        user,
        can_be_edited: false,
        is_anonymous: false,
        can_manage_chat: true,
        can_delete_messages: true,
        can_manage_video_chats: true,
        can_restrict_members: true,
        can_promote_members: false,
        can_change_info: true,
        can_invite_users: true,
        can_post_stories: false,
        can_edit_stories: false,
        can_delete_stories: false,
        can_send_welcome_messages: false,
      };
    }
    if (status === "member") return { status, user };
    return { status: "left", user };
  }

  topicsOf(chatId: number): ReadonlyMap<number, string> {
    return this.topics.get(chatId) ?? new Map();
  }

  addFile(bytes: Uint8Array, options: { localDir?: string; sizeUnknown?: boolean } = {}): FileRef {
    const n = this.nextFileId++;
    const ref = {
      file_id: `AgACAgIAAx0Cfake${n}`,
      file_unique_id: `AQADfake${n}`,
      file_size: bytes.byteLength,
    };
    let path = `documents/file_${n}`;
    if (options.localDir) {
      path = join(options.localDir, `file_${n}`);
      writeFileSync(path, bytes);
    }
    this.files.set(ref.file_id, {
      bytes,
      path,
      size: bytes.byteLength,
      sizeUnknown: options.sizeUnknown ?? false,
    });
    return ref;
  }

  removeFile(fileId: string): void {
    this.files.delete(fileId);
  }

  failNextDownload(status: number, times = 1): void {
    this.downloadFailures.push(...Array.from({ length: times }, () => status));
  }

  stallNextDownload(bytes: number): void {
    this.downloadStalls.push(bytes);
  }

  forgetCalls(): void {
    this.calls.length = 0;
    this.sent.length = 0;
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    for (const poll of [...this.polls]) poll.finish(ok([]));
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error("fake Telegram closed before a matching call arrived"));
    }
    this.waiters.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // Keep-alive sockets from grammY's agent would otherwise hold close() open.
    this.server.closeAllConnections();
    await closed;
  }

  private getFile(params: Params) {
    const fileId = params.file_id;
    if (typeof fileId !== "string" || fileId === "") throw badRequest("file_id is empty");
    const file = this.files.get(fileId);
    if (!file) throw badRequest("invalid file_id");
    // A local Bot API server serves any size; the cloud one refuses what is over its limit.
    const local = isAbsolute(file.path);
    if (!local && file.size > TELEGRAM_DOWNLOAD_LIMIT) throw badRequest("file is too big");
    return {
      file_id: fileId,
      file_unique_id: `AQAD${fileId}`,
      ...(file.sizeUnknown ? {} : { file_size: file.size }),
      file_path: file.path,
    };
  }

  /** GET /file/bot<token>/<file_path>, the way Telegram serves files it gave a path for. */
  private serveFile(token: string, path: string, res: ServerResponse): void {
    const file = [...this.files.values()].find((f) => f.path === path);
    if (token !== this.token || !file || isAbsolute(file.path)) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
      return;
    }
    const failure = this.downloadFailures.shift();
    if (failure !== undefined) {
      res.writeHead(failure);
      res.end();
      return;
    }
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": String(file.bytes.byteLength),
    });
    const stall = this.downloadStalls.shift();
    if (stall !== undefined) {
      res.write(file.bytes.subarray(0, stall));
      return;
    }
    this.downloads.push(path);
    res.end(file.bytes);
  }

  private async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.apiRoot);
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (download && req.method === "GET") {
      this.serveFile(download[1] as string, decodeURIComponent(download[2] as string), res);
      return;
    }
    const route = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!route) {
      respond(res, { ok: false, error_code: 404, description: "Not Found" });
      return;
    }
    const [, token, method = ""] = route;
    const body = await readParams(req, url);
    const call: CallRecord = { method, body: body instanceof ApiError ? {} : body, at: Date.now() };
    this.record(call);
    const signal = abortOnDisconnect(res);
    const hold = this.holds.get(method.toLowerCase())?.shift();
    if (hold && !(await hold.keep(call, signal))) return;
    const response = await this.dispatch(token, method, body, signal);
    call.response = response;
    this.notifyWaiters();
    respond(res, response);
  }

  private async dispatch(
    token: string | undefined,
    method: string,
    body: Params | ApiError,
    signal: AbortSignal,
  ): Promise<ApiResponse> {
    try {
      if (token !== this.token) throw new ApiError(401, "Unauthorized");
      if (body instanceof ApiError) throw body;
      const failure = this.failures.get(method.toLowerCase())?.shift();
      if (failure) throw scriptedError(failure);
      const handler = this.handlers.get(method.toLowerCase());
      return handler ? await handler(body, signal) : ok(true);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return {
        ok: false,
        error_code: error.errorCode,
        description: error.description,
        ...(error.retryAfter === undefined
          ? {}
          : { parameters: { retry_after: error.retryAfter } }),
      };
    }
  }

  private record(call: RecordedCall): void {
    this.calls.push(call);
    this.notifyWaiters();
  }

  private notifyWaiters(): void {
    for (const waiter of this.waiters) {
      const call = this.calls.find(waiter.matches);
      if (!call) continue;
      clearTimeout(waiter.timer);
      this.waiters.delete(waiter);
      waiter.resolve(call);
    }
  }

  private describeCalls(): string {
    if (this.calls.length === 0) return "  (none)";
    return this.calls
      .map((call, index) => {
        const body = truncate(JSON.stringify(call.body), 200);
        const outcome = !call.response
          ? "pending"
          : call.response.ok
            ? "ok"
            : `${call.response.error_code} ${call.response.description}`;
        return `  ${index + 1}. ${call.method} ${body} → ${outcome}`;
      })
      .join("\n");
  }

  /** Whether the chat has topics at all: a forum, or a private chat with a bot in threaded mode. */
  private hasTopics(chatId: number): boolean {
    return chatFor(chatId).type === "private"
      ? this.bot.has_topics_enabled
      : this.forums.has(chatId);
  }

  /**
   * A message_thread_id, checked as Telegram checks it: an Integer, and in a private chat only
   * when the bot has topics there. In supergroups the fake takes any thread, as reply threads of
   * ordinary supergroups and topics it was not told of exist too.
   */
  private readThread(params: Params, chatId: number): number | undefined {
    const threadId = readInteger(params, "message_thread_id");
    if (threadId === undefined) return undefined;
    const type = chatFor(chatId).type;
    if (threadId <= 0 || type === "group" || (type === "private" && !this.hasTopics(chatId))) {
      throw badRequest("message thread not found");
    }
    return threadId;
  }

  private readTopicName(params: Params, min: number): string | undefined {
    const { name } = params;
    if (name === undefined && min === 0) return undefined;
    if (typeof name !== "string" || name.length < min) throw badRequest("TOPIC_TITLE_EMPTY");
    if (name.length > 128) throw badRequest("TOPIC_TITLE_TOO_LONG");
    return name;
  }

  private createForumTopic(params: Params): ForumTopic {
    const chatId = readChatId(params);
    if (!this.hasTopics(chatId)) throw badRequest("the chat is not a forum");
    if (chatFor(chatId).type !== "private" && !this.forums.get(chatId)?.botCanManageTopics) {
      throw badRequest("not enough rights to create a topic");
    }
    const name = this.readTopicName(params, 1) as string;
    const iconColor = params.icon_color ?? TOPIC_COLORS[0];
    if (!TOPIC_COLORS.includes(iconColor as number)) throw badRequest("TOPIC_ICON_COLOR_INVALID");
    const threadId = this.nextThreadId++;
    const topics = this.topics.get(chatId) ?? new Map<number, string>();
    topics.set(threadId, name);
    this.topics.set(chatId, topics);
    return { message_thread_id: threadId, name, icon_color: iconColor as number };
  }

  /** Only topics the bot created can be renamed here (others would need admin rights). */
  private editForumTopic(params: Params): true {
    const chatId = readChatId(params);
    const threadId = readInteger(params, "message_thread_id");
    const topics = this.topics.get(chatId);
    if (threadId === undefined || !topics?.has(threadId)) throw badRequest("TOPIC_ID_INVALID");
    const name = this.readTopicName(params, 0);
    if (name) topics.set(threadId, name);
    return true;
  }

  /** Private chats only, 0–4096 characters, and no more than draftsPerSecond per chat. */
  private sendMessageDraft(params: Params): true {
    const { chatId, draftId } = this.readDraft(params);
    const text = typeof params.text === "string" ? params.text : "";
    const parsed = parseText(
      text,
      typeof params.parse_mode === "string" ? params.parse_mode : undefined,
    );
    if (parsed.text.length > TELEGRAM_TEXT_LIMIT) throw badRequest("message is too long");
    return this.showDraft({ chat_id: chatId, draft_id: draftId, plain_text: parsed.text });
  }

  /**
   * A rich draft: what sendRichMessage accepts, without files to fetch (no upload, no media by
   * URL), under the same per-chat rate as sendMessageDraft.
   */
  private sendRichMessageDraft(params: Params): true {
    const { chatId, draftId } = this.readDraft(params);
    const rich = readRichMessage(params);
    if (rich.media > 0) {
      throw badRequest("media by URL can't be used in a rich message draft");
    }
    return this.showDraft({
      chat_id: chatId,
      draft_id: draftId,
      plain_text: rich.text,
      rich_html: rich.html,
    });
  }

  /** What every draft method checks first: the chat (a private one), the draft and the thread. */
  private readDraft(params: Params): { chatId: number; draftId: number } {
    const chatId = readChatId(params);
    const draftId = readInteger(params, "draft_id");
    if (draftId === undefined || draftId === 0) throw badRequest("draft_id must be non-zero");
    if (chatFor(chatId).type !== "private") {
      throw badRequest("message drafts can be sent only to private chats");
    }
    this.readThread(params, chatId);
    return { chatId, draftId };
  }

  /** Records a draft, or answers 429 when its chat had draftsPerSecond in the last second. */
  private showDraft(draft: Omit<DraftShown, "at">): true {
    const now = Date.now();
    const recent = (this.draftTimes.get(draft.chat_id) ?? []).filter((at) => now - at < 1_000);
    if (recent.length >= this.draftsPerSecond) {
      this.draftTimes.set(draft.chat_id, recent);
      throw new ApiError(429, "Too Many Requests: retry after 1", 1);
    }
    recent.push(now);
    this.draftTimes.set(draft.chat_id, recent);
    this.drafts.push({ ...draft, at: now });
    return true;
  }

  private findSent(
    params: Params,
    purpose: "edit" | "delete",
  ): { index: number; chatId: number; messageId: number } {
    const chatId = readChatId(params);
    const messageId = readInteger(params, "message_id");
    const index = this.sent.findIndex((m) => m.chat_id === chatId && m.message_id === messageId);
    if (messageId === undefined || index < 0) throw badRequest(`message to ${purpose} not found`);
    return { index, chatId, messageId };
  }

  /** A text edit (HTML or plain), or with `rich_message` one that makes the message rich. */
  private editMessageText(params: Params): Message {
    const { index } = this.findSent(params, "edit");
    const before = this.sent[index] as SentMessage;
    if ((params.text === undefined) === (params.rich_message === undefined)) {
      throw badRequest("exactly one of text or rich_message must be specified");
    }
    const after =
      params.rich_message === undefined ? editedText(before, params) : editedRich(before, params);
    this.sent[index] = after;
    this.edits.push(after);
    return after.message;
  }

  private deleteMessage(params: Params): true {
    const { index, chatId, messageId } = this.findSent(params, "delete");
    this.sent.splice(index, 1);
    this.deleted.push({ chat_id: chatId, message_id: messageId });
    return true;
  }

  pressStop(chatId: number, draftId: number, threadId?: number): Update {
    const chat = chatFor(chatId);
    if (chat.type !== "private")
      throw new Error("fake Telegram: drafts exist in private chats only");
    return this.pushUpdate({
      stopped_message_generation: {
        chat,
        ...(threadId === undefined ? {} : { message_thread_id: threadId }),
        draft_id: draftId,
      },
    });
  }

  pressButton(chatId: number, messageId: number, data: string, userId: number): Update {
    const sent = this.sent.find((m) => m.chat_id === chatId && m.message_id === messageId);
    const buttons = sent?.message.reply_markup?.inline_keyboard.flat() ?? [];
    if (!buttons.some((b) => "callback_data" in b && b.callback_data === data)) {
      throw new Error(`fake Telegram: message ${messageId} shows no button with data "${data}"`);
    }
    return this.pushUpdate({
      callback_query: {
        id: String(this.nextCallbackQueryId++),
        from: { id: userId, is_bot: false, first_name: "Test User" },
        message: sent?.message as Message,
        chat_instance: String(chatId),
        data,
      },
    });
  }

  private sendMessage(params: Params): Message {
    const chatId = readChatId(params);
    const threadId = this.readThread(params, chatId);
    const text = typeof params.text === "string" ? params.text : "";
    const parseMode = typeof params.parse_mode === "string" ? params.parse_mode : undefined;
    const parsed = parseText(text, parseMode);
    // Telegram counts zero-width characters and Hangul fillers as nothing, like whitespace.
    if (BLANK.test(parsed.text)) throw badRequest("message text is empty");
    if (parsed.text.length > TELEGRAM_TEXT_LIMIT) throw badRequest("message is too long");
    const markup = readInlineKeyboard(params);
    const message: Message = {
      message_id: this.nextMessageId++,
      from: botAsUser(this.bot),
      chat: chatFor(chatId),
      date: unixNow(),
      ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true }),
      text: parsed.text,
      ...(parsed.entities.length > 0 ? { entities: parsed.entities } : {}),
      ...(markup === undefined ? {} : { reply_markup: markup }),
    };
    this.sent.push({
      message_id: message.message_id,
      chat_id: chatId,
      text,
      parse_mode: parseMode,
      plain_text: parsed.text,
      body: params,
      message,
    });
    return message;
  }

  private sendRichMessage(params: Params): Message {
    const chatId = readChatId(params);
    const threadId = this.readThread(params, chatId);
    const rich = readRichMessage(params);
    const message: Message = {
      message_id: this.nextMessageId++,
      from: botAsUser(this.bot),
      chat: chatFor(chatId),
      date: unixNow(),
      ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true }),
      rich_message: { blocks: rich.blocks },
    };
    this.sent.push({
      message_id: message.message_id,
      chat_id: chatId,
      text: rich.html,
      parse_mode: "rich",
      plain_text: rich.text,
      body: params,
      message,
    });
    return message;
  }

  /**
   * sendPhoto, sendDocument and sendVoice with an uploaded file (multipart, `attach://<id>`) or the
   * file_id of one Telegram holds; URLs are not modelled. A photo is checked as Telegram checks
   * it. A voice note must be an Ogg Opus stream, every page of it (Telegram would show anything
   * else as a plain file, which no test wants to pass unnoticed).
   */
  private sendFile(method: SentFile["method"], params: Params): Message {
    const chatId = readChatId(params);
    const threadId = this.readThread(params, chatId);
    const field = FILE_FIELDS[method];
    const file = this.inputFile(params, field);
    let voice: OggOpusInfo | undefined;
    if (method === "sendPhoto") {
      const problem = photoProblem(file.bytes);
      if (problem) throw badRequest(problem);
    } else if (method === "sendVoice") {
      const checked = checkOggOpus(file.bytes);
      if ("problem" in checked) throw badRequest(`not an Ogg Opus voice note: ${checked.problem}`);
      voice = checked;
    }
    if (method !== "sendPhoto" && file.bytes.byteLength > UPLOAD_MAX_BYTES) {
      throw new ApiError(413, "Request Entity Too Large");
    }
    const caption = typeof params.caption === "string" ? params.caption : undefined;
    const parseMode = typeof params.parse_mode === "string" ? params.parse_mode : undefined;
    const parsed = caption === undefined ? undefined : parseText(caption, parseMode);
    if (parsed && parsed.text.length > CAPTION_LIMIT) {
      throw badRequest("message caption is too long");
    }
    const ref = this.addFile(file.bytes);
    const duration =
      typeof params.duration === "string" ? Number(params.duration) : params.duration;
    const media: Partial<Message> =
      method === "sendPhoto"
        ? { photo: [{ ...ref, ...photoDimensions(file.bytes) }] }
        : method === "sendVoice"
          ? {
              voice: {
                ...ref,
                duration: typeof duration === "number" ? duration : Math.round(voice?.seconds ?? 0),
                mime_type: "audio/ogg",
              },
            }
          : { document: { ...ref, file_name: file.filename } };
    const message = {
      message_id: this.nextMessageId++,
      from: botAsUser(this.bot),
      chat: chatFor(chatId),
      date: unixNow(),
      ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true }),
      ...media,
      ...(parsed && parsed.text !== "" ? { caption: parsed.text } : {}),
      ...(parsed && parsed.entities.length > 0 ? { caption_entities: parsed.entities } : {}),
    } as Message;
    this.sentFiles.push({
      method,
      chat_id: chatId,
      message_thread_id: threadId,
      file_name: file.filename,
      bytes: file.bytes,
      caption: parsed?.text,
      message,
    });
    return message;
  }

  /** The file a send method names: an upload of this request, or one Telegram holds. */
  private inputFile(params: Params, field: string): UploadedFile {
    const value = params[field];
    if (typeof value !== "string" || value === "")
      throw badRequest(`there is no ${field} in the request`);
    const attached = /^attach:\/\/(.+)$/.exec(value)?.[1];
    if (attached !== undefined) {
      const upload = params[attached];
      if (!(upload instanceof UploadedFile)) {
        throw badRequest(`file attach://${attached} not found in the request`);
      }
      if (upload.bytes.byteLength === 0) throw badRequest("file must be non-empty");
      return upload;
    }
    const held = this.files.get(value);
    if (!held) throw badRequest("wrong file identifier/HTTP URL specified");
    return new UploadedFile(held.path.split("/").pop() ?? "file", Buffer.from(held.bytes));
  }

  private sendChatAction(params: Params): true {
    this.readThread(params, readChatId(params));
    if (typeof params.action !== "string" || !CHAT_ACTIONS.has(params.action)) {
      throw badRequest("wrong parameter action in request");
    }
    return true;
  }

  private setMyCommands(params: Params): true {
    if (!Array.isArray(params.commands)) throw badRequest('field "commands" must be an Array');
    return this.setCommands(params.commands.map(readBotCommand));
  }

  private setCommands(commands: BotCommand[]): true {
    this.commands = commands;
    return true;
  }

  private setWebhook(params: Params): true {
    const url = typeof params.url === "string" ? params.url : "";
    if (url === "") return this.deleteWebhook(params);
    if (!url.startsWith("https://")) {
      throw badRequest("bad webhook: An HTTPS URL must be provided for webhook");
    }
    const secret = params.secret_token;
    if (
      secret !== undefined &&
      (typeof secret !== "string" || !/^[A-Za-z0-9_-]{1,256}$/.test(secret))
    ) {
      throw badRequest("bad webhook: secret token contains unallowed characters");
    }
    this.dropPendingIfAsked(params);
    this.webhook = { url, secret_token: secret };
    return true;
  }

  private deleteWebhook(params: Params): true {
    this.dropPendingIfAsked(params);
    this.webhook = undefined;
    return true;
  }

  private dropPendingIfAsked(params: Params): void {
    if (params.drop_pending_updates === true || params.drop_pending_updates === "true") {
      this.queue = [];
    }
  }

  private webhookInfo(): WebhookInfo {
    return {
      url: this.webhook?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: this.queue.length,
      ...(this.webhook ? { max_connections: 40 } : {}),
    };
  }

  private getUpdates(params: Params, signal: AbortSignal): ApiResponse | Promise<ApiResponse> {
    if (this.webhook) {
      throw new ApiError(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    }
    this.confirmUpTo(readInteger(params, "offset") ?? 0);
    const limit = Math.min(Math.max(readInteger(params, "limit") ?? 100, 1), 100);
    const timeout = readInteger(params, "timeout") ?? 0;
    // Like Telegram: a newer poll ends an older one (two pollers are a bug worth seeing).
    for (const poll of [...this.polls]) {
      poll.finish({
        ok: false,
        error_code: 409,
        description:
          "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
      });
    }
    if (this.queue.length > 0 || timeout <= 0) return ok(this.queue.slice(0, limit));
    return this.longPoll(limit, timeout, signal);
  }

  /** Telegram forgets updates below a positive offset; a negative one keeps only the last -offset. */
  private confirmUpTo(offset: number): void {
    if (offset > 0) this.queue = this.queue.filter((update) => update.update_id >= offset);
    if (offset < 0) this.queue = this.queue.slice(offset);
  }

  private longPoll(
    limit: number,
    timeoutSeconds: number,
    signal: AbortSignal,
  ): Promise<ApiResponse> {
    return new Promise((resolve) => {
      const onAbort = (): void => poll.finish(ok([]));
      const poll: PendingPoll = {
        limit,
        finish: (response) => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          this.polls.delete(poll);
          resolve(response);
        },
      };
      const timer = setTimeout(() => poll.finish(ok([])), timeoutSeconds * 1000);
      signal.addEventListener("abort", onAbort);
      this.polls.add(poll);
    });
  }
}

class Hold implements HeldCall {
  readonly arrived: Promise<RecordedCall>;
  private arrive: (call: RecordedCall) => void = () => {};
  private readonly released: Promise<void>;
  private resolveReleased: () => void = () => {};
  readonly hungUp: Promise<void>;
  private hangUp: () => void = () => {};

  constructor() {
    this.hungUp = new Promise((resolve) => {
      this.hangUp = resolve;
    });
    this.arrived = new Promise((resolve) => {
      this.arrive = resolve;
    });
    this.released = new Promise((resolve) => {
      this.resolveReleased = resolve;
    });
  }

  release(): void {
    this.resolveReleased();
  }

  /** Waits for release(); false when the client disconnected first. */
  async keep(call: RecordedCall, signal: AbortSignal): Promise<boolean> {
    this.arrive(call);
    const disconnected = new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    void disconnected.then(this.hangUp);
    await Promise.race([this.released, disconnected]);
    return !signal.aborted;
  }
}

/** The icon colours createForumTopic accepts. */
const TOPIC_COLORS: readonly number[] = [
  0x6fb9f0, 0xffd67e, 0xcb86db, 0x8eee98, 0xff93b2, 0xfb6f5f,
];

function ok(result: unknown): ApiResponse {
  return { ok: true, result };
}

function scriptedError(failure: ScriptedFailure): ApiError {
  const retryAfter = failure.error_code === 429 ? (failure.retry_after ?? 1) : failure.retry_after;
  return new ApiError(
    failure.error_code,
    failure.description ?? defaultDescription(failure.error_code, retryAfter),
    retryAfter,
  );
}

function defaultDescription(code: number, retryAfter: number | undefined): string {
  switch (code) {
    case 429:
      return `Too Many Requests: retry after ${retryAfter}`;
    case 403:
      return "Forbidden: bot was blocked by the user";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    default:
      return `Error ${code}`;
  }
}

const BLANK = /^[\s\u200b-\u200f\u2060\ufeff\u3164\u115f\u1160\uffa0]*$/;

/**
 * A rich_message parameter as Telegram reads it. Only the `html` form is modelled; `markdown` and
 * `blocks` are refused as not modelled.
 */
function readRichMessage(params: Params): { html: string } & Extract<RichHtmlResult, { ok: true }> {
  const rich = params.rich_message;
  if (!isRecord(rich)) throw badRequest('field "rich_message" must be an Object');
  const forms = ["html", "markdown", "blocks"].filter((form) => rich[form] !== undefined);
  if (forms.length !== 1) {
    throw badRequest("exactly one of html, markdown or blocks must be specified in rich_message");
  }
  if (typeof rich.html !== "string") {
    throw badRequest(
      "the fake models only rich_message.html; extend test/fakes/telegram-rich.ts for the rest",
    );
  }
  if (rich.media !== undefined) {
    throw badRequest("the fake does not model rich_message.media; extend test/fakes/telegram.ts");
  }
  const parsed = validateRichHtml(rich.html);
  if (!parsed.ok) throw badRequest(`can't parse rich message: ${parsed.reason}`);
  return { ...parsed, html: rich.html };
}

/** A message's text replaced, checked as sendMessage checks it. */
function editedText(before: SentMessage, params: Params): SentMessage {
  const text = typeof params.text === "string" ? params.text : "";
  const parseMode = typeof params.parse_mode === "string" ? params.parse_mode : undefined;
  const parsed = parseText(text, parseMode);
  if (BLANK.test(parsed.text)) throw badRequest("message text is empty");
  if (parsed.text.length > TELEGRAM_TEXT_LIMIT) throw badRequest("MESSAGE_TOO_LONG");
  if (
    before.parse_mode !== "rich" &&
    parsed.text === before.plain_text &&
    JSON.stringify(parsed.entities) === JSON.stringify(before.message.entities ?? [])
  ) {
    throw scriptedError(MESSAGE_NOT_MODIFIED);
  }
  // An edit without reply_markup takes the inline keyboard away, as Telegram's does.
  const {
    entities: _old,
    rich_message: _rich,
    reply_markup: _keyboard,
    ...rest
  } = before.message as Message & {
    rich_message?: unknown;
  };
  const entities = parsed.entities.length > 0 ? { entities: parsed.entities } : {};
  const markup = readInlineKeyboard(params);
  const message = {
    ...rest,
    text: parsed.text,
    ...entities,
    ...(markup === undefined ? {} : { reply_markup: markup }),
    edit_date: unixNow(),
  } as Message;
  return { ...before, text, parse_mode: parseMode, plain_text: parsed.text, body: params, message };
}

/** A message made rich (or its rich content replaced), checked as sendRichMessage checks it. */
function editedRich(before: SentMessage, params: Params): SentMessage {
  const rich = readRichMessage(params);
  const old = (before.message as Message & { rich_message?: { blocks: unknown } }).rich_message;
  if (before.parse_mode === "rich" && JSON.stringify(old?.blocks) === JSON.stringify(rich.blocks)) {
    throw scriptedError(MESSAGE_NOT_MODIFIED);
  }
  const { entities: _old, text: _text, ...rest } = before.message as Message & { text?: string };
  const message = {
    ...rest,
    rich_message: { blocks: rich.blocks },
    edit_date: unixNow(),
  } as Message;
  return {
    ...before,
    text: rich.html,
    parse_mode: "rich",
    plain_text: rich.text,
    body: params,
    message,
  };
}

type ParsedText = { text: string; entities: NonNullable<Message["entities"]> };

function parseText(text: string, parseMode: string | undefined): ParsedText {
  if (parseMode === undefined || parseMode === "") return { text, entities: [] };
  if (parseMode.toUpperCase() !== "HTML") {
    throw badRequest(`unsupported parse_mode "${parseMode}" (the fake models only "HTML")`);
  }
  const parsed = validateTelegramHtml(text);
  if (!parsed.ok) throw badRequest(`can't parse entities: ${parsed.reason}`);
  return parsed;
}

function readInteger(params: Params, name: string): number | undefined {
  const value = params[name];
  if (value === undefined || value === null) return undefined;
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number)) {
    throw badRequest(`field "${name}" must be an Integer`);
  }
  return number;
}

/**
 * An inline keyboard as Telegram checks it: rows of buttons, each with a text and, here, the
 * callback_data of 1-64 bytes that Koroku's buttons carry (other button kinds are not modelled).
 */
function readInlineKeyboard(params: Params): InlineKeyboardMarkup | undefined {
  const markup = params.reply_markup;
  if (markup === undefined) return undefined;
  const rows = isRecord(markup) ? markup.inline_keyboard : undefined;
  if (!Array.isArray(rows) || !rows.every(Array.isArray)) {
    throw badRequest("can't parse reply keyboard markup JSON object");
  }
  for (const button of rows.flat() as unknown[]) {
    if (!isRecord(button) || typeof button.text !== "string" || button.text === "") {
      throw badRequest("text buttons are unallowed in the inline keyboard");
    }
    const data = button.callback_data;
    if (typeof data !== "string") throw badRequest("inline keyboard button kind not modelled");
    const bytes = Buffer.byteLength(data);
    if (bytes < 1 || bytes > 64) throw badRequest("BUTTON_DATA_INVALID");
  }
  return markup as unknown as InlineKeyboardMarkup;
}

function answerCallbackQuery(params: Params): true {
  if (typeof params.callback_query_id !== "string" || params.callback_query_id === "") {
    throw badRequest("query is too old and response timeout expired or query ID is invalid");
  }
  if (typeof params.text === "string" && params.text.length > 200) {
    throw badRequest("MESSAGE_TOO_LONG");
  }
  return true;
}

function readChatId(params: Params): number {
  if (params.chat_id === undefined || params.chat_id === "") throw badRequest("chat_id is empty");
  // "@username" chats do not exist in the fake.
  if (typeof params.chat_id === "string" && !/^-?\d+$/.test(params.chat_id)) {
    throw badRequest("chat not found");
  }
  const chatId = readInteger(params, "chat_id");
  if (chatId === undefined || chatId === 0) throw badRequest("chat not found");
  return chatId;
}

function readBotCommand(value: unknown): BotCommand {
  const entry = isRecord(value) ? value : {};
  const { command, description } = entry;
  if (typeof command !== "string" || !/^[a-z0-9_]{1,32}$/.test(command)) {
    throw badRequest("BOT_COMMAND_INVALID");
  }
  if (typeof description !== "string" || description.length < 1 || description.length > 256) {
    throw badRequest("BOT_COMMAND_DESCRIPTION_INVALID");
  }
  return { command, description };
}

async function readParams(req: IncomingMessage, url: URL): Promise<Params | ApiError> {
  const query = Object.fromEntries(url.searchParams);
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  // A file upload may carry 50 MB; anything else stays small.
  const multipart = type === "multipart/form-data";
  const raw = await readBody(req, multipart ? UPLOAD_MAX_BYTES + MAX_BODY_BYTES : MAX_BODY_BYTES);
  if (raw === undefined) return new ApiError(413, "Request Entity Too Large");
  if (raw.byteLength === 0) return query;
  if (multipart) {
    const fields = parseMultipart(raw, String(req.headers["content-type"]));
    return typeof fields === "string" ? badRequest(fields) : { ...query, ...fields };
  }
  const text = raw.toString("utf8");
  if (type === "application/json") return parseJsonObject(text, query);
  if (type === "application/x-www-form-urlencoded") {
    return { ...query, ...Object.fromEntries(new URLSearchParams(text)) };
  }
  return badRequest(`unsupported content-type "${type}"; send application/json`);
}

function parseJsonObject(raw: string, query: Params): Params | ApiError {
  try {
    const parsed: unknown = JSON.parse(raw);
    if (isRecord(parsed)) return { ...query, ...parsed };
    return badRequest("the request body must be a JSON object");
  } catch {
    return badRequest("can't parse JSON body");
  }
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBytes) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

function abortOnDisconnect(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableEnded) controller.abort();
  });
  return controller.signal;
}

function respond(res: ServerResponse, response: ApiResponse): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(response.ok ? 200 : response.error_code, { "content-type": "application/json" });
  res.end(JSON.stringify(response));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
