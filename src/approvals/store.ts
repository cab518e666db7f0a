import type { Kysely, Selectable } from "kysely";
import type { ApprovalStatus, Database, ToolApprovalsTable } from "../db/schema.js";

export type Approval = {
  id: number;
  conversation: string;
  chatId: number;
  threadId: number | undefined;
  scope: string;
  eventId: number;
  callIndex: number;
  tool: string;
  args: Record<string, unknown>;
  askedBy: number | undefined;
  status: ApprovalStatus;
  messageId: number | undefined;
  expiresAt: number;
  started: boolean;
};

export type NewApproval = Omit<Approval, "id" | "status" | "messageId" | "started">;

export type Grant = { id: number; scope: string; tool: string; grantedBy: number | undefined };

const toApproval = (row: Selectable<ToolApprovalsTable>): Approval => ({
  id: Number(row.id),
  conversation: row.conversation,
  chatId: Number(row.chat_id),
  threadId: row.thread_id === null ? undefined : Number(row.thread_id),
  scope: row.scope,
  eventId: Number(row.event_id),
  callIndex: row.call_index,
  tool: row.tool,
  args: JSON.parse(row.args_json) as Record<string, unknown>,
  askedBy: row.asked_by === null ? undefined : Number(row.asked_by),
  status: row.status,
  messageId: row.message_id === null ? undefined : Number(row.message_id),
  expiresAt: Number(row.expires_at),
  started: Number(row.started) === 1,
});

const COLUMNS = [
  "id",
  "conversation",
  "chat_id",
  "thread_id",
  "scope",
  "event_id",
  "call_index",
  "tool",
  "args_json",
  "asked_by",
  "status",
  "message_id",
  "created_at",
  "expires_at",
  "decided_at",
  "decided_by",
  "started",
] as const;

/** The answers a request can get, and what they are stored as. */
export type Decision = Extract<ApprovalStatus, "allowed" | "always" | "denied">;

/**
 * Tool approvals and "always" grants in SQL: the wait for a user's yes outlives the process, and
 * any replica can take it up.
 */
export function createApprovalStore(db: Kysely<Database>, now: () => number = Date.now) {
  const iso = () => new Date(now()).toISOString();

  /** The requests of one model event's calls (those asked so far). */
  async function ofEvent(conversation: string, eventId: number): Promise<Approval[]> {
    const rows = await db
      .selectFrom("tool_approvals")
      .select(COLUMNS)
      .where("conversation", "=", conversation)
      .where("event_id", "=", eventId)
      .orderBy("call_index")
      .execute();
    return rows.map(toApproval);
  }

  /** Asks for these calls; a call asked for before (a run after a restart) is not asked again. */
  async function request(approvals: readonly NewApproval[]): Promise<void> {
    if (approvals.length === 0) return;
    await db
      .insertInto("tool_approvals")
      .values(
        approvals.map((a) => ({
          conversation: a.conversation,
          chat_id: String(a.chatId),
          thread_id: a.threadId ?? null,
          scope: a.scope,
          event_id: a.eventId,
          call_index: a.callIndex,
          tool: a.tool,
          args_json: JSON.stringify(a.args),
          asked_by: a.askedBy ?? null,
          status: "pending" as const,
          created_at: iso(),
          expires_at: a.expiresAt,
        })),
      )
      .onConflict((oc) => oc.columns(["conversation", "event_id", "call_index"]).doNothing())
      .execute();
  }

  async function get(id: number): Promise<Approval | undefined> {
    const row = await db
      .selectFrom("tool_approvals")
      .select(COLUMNS)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toApproval(row);
  }

  /** Answers a request still pending (once: a second press, or a press after expiry, changes nothing). */
  async function decide(id: number, status: Decision, by: number): Promise<Approval | undefined> {
    const row = await db
      .updateTable("tool_approvals")
      .set({ status, decided_at: iso(), decided_by: by })
      .where("id", "=", id)
      .where("status", "=", "pending")
      .returning(COLUMNS)
      .executeTakeFirst();
    return row && toApproval(row);
  }

  /** Ends the waiting requests that match, as `status`. */
  async function endPending(
    status: Extract<ApprovalStatus, "expired" | "cancelled" | "superseded">,
    where: { conversation?: string; expiredAt?: number },
  ): Promise<Approval[]> {
    let query = db
      .updateTable("tool_approvals")
      .set({ status, decided_at: iso() })
      .where("status", "=", "pending");
    if (where.conversation !== undefined)
      query = query.where("conversation", "=", where.conversation);
    if (where.expiredAt !== undefined) query = query.where("expires_at", "<=", where.expiredAt);
    const rows = await query.returning(COLUMNS).execute();
    return rows.map(toApproval);
  }

  return {
    ofEvent,
    request,
    get,
    decide,
    /** Requests whose time ran out, now expired. */
    expireDue: (at: number) => endPending("expired", { expiredAt: at }),
    /** The conversation's waiting requests, cancelled by a stop. */
    cancel: (conversation: string) => endPending("cancelled", { conversation }),
    /** The conversation's waiting requests, left unanswered for a new message. */
    supersede: (conversation: string) => endPending("superseded", { conversation }),
    async pendingIn(conversation: string): Promise<Approval[]> {
      const rows = await db
        .selectFrom("tool_approvals")
        .select(COLUMNS)
        .where("conversation", "=", conversation)
        .where("status", "=", "pending")
        .execute();
      return rows.map(toApproval);
    },
    async markStarted(ids: readonly number[]): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable("tool_approvals")
        .set({ started: 1 })
        .where("id", "in", [...ids])
        .execute();
    },
    async setMessage(id: number, messageId: number): Promise<void> {
      await db
        .updateTable("tool_approvals")
        .set({ message_id: messageId })
        .where("id", "=", id)
        .execute();
    },
    async hasGrant(scope: string, tool: string): Promise<boolean> {
      const row = await db
        .selectFrom("tool_grants")
        .select("id")
        .where("scope", "=", scope)
        .where("tool", "=", tool)
        .executeTakeFirst();
      return row !== undefined;
    },
    /** `by`: who pressed Always allow; undefined in the terminal, whose user has no id. */
    async grant(scope: string, tool: string, by: number | undefined): Promise<void> {
      await db
        .insertInto("tool_grants")
        .values({ scope, tool, granted_by: by ?? null, created_at: iso() })
        .onConflict((oc) => oc.columns(["scope", "tool"]).doNothing())
        .execute();
    },
    async grants(scope: string): Promise<Grant[]> {
      const rows = await db
        .selectFrom("tool_grants")
        .select(["id", "scope", "tool", "granted_by"])
        .where("scope", "=", scope)
        .orderBy("tool")
        .execute();
      return rows.map((r) => ({
        id: Number(r.id),
        scope: r.scope,
        tool: r.tool,
        grantedBy: r.granted_by === null ? undefined : Number(r.granted_by),
      }));
    },
    /** Revokes a grant of this scope; false when it is gone already. */
    async revoke(scope: string, id: number): Promise<boolean> {
      const result = await db
        .deleteFrom("tool_grants")
        .where("scope", "=", scope)
        .where("id", "=", id)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    /**
     * A group that became a supergroup keeps its "always" grants; one the new scope holds already
     * stays as it is. Returns how many grants moved.
     */
    async moveGrants(from: string, to: string): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const held = trx.selectFrom("tool_grants").select("tool").where("scope", "=", to);
        const moved = await trx
          .updateTable("tool_grants")
          .set({ scope: to })
          .where("scope", "=", from)
          .where("tool", "not in", held)
          .executeTakeFirst();
        await trx.deleteFrom("tool_grants").where("scope", "=", from).execute();
        return Number(moved.numUpdatedRows);
      });
    },
  };
}

export type ApprovalStore = ReturnType<typeof createApprovalStore>;
