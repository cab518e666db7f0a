import { type Kysely, PostgresAdapter, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Recall by meaning (src/recall/):
 * - `embedding_queue`: events waiting to be embedded, claimed with a lease (`claimed_by`,
 *   `lease_until` in epoch ms) so that replicas never embed one twice; a restart finds them here.
 * - `embedding_progress`: how far the queue has taken in `messages` (one row, `cursor`), so that
 *   the history stored before is taken in too (the backfill), in id order.
 * - `embeddings`: one vector per chunk of an event, in its scope. SQLite: little-endian float32
 *   BLOBs, which sqlite-vec's functions read as they are. PostgreSQL: `real[]`, which the exact
 *   search reads without any extension and pgvector casts to its `vector` where installed.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable("embedding_queue")
    .addColumn("message_id", "bigint", (c) => c.primaryKey())
    .addColumn("lease_until", "bigint")
    .addColumn("claimed_by", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable("embedding_progress")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("last_id", "bigint", (c) => c.notNull())
    .execute();
  await db.insertInto("embedding_progress").values({ name: "cursor", last_id: 0 }).execute();
  await db.schema
    .createTable("embeddings")
    .addColumn("id", pg ? "bigserial" : "integer", (c) =>
      pg ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn("message_id", "bigint", (c) => c.notNull())
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("chunk", "integer", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("embedding", pg ? sql`real[]` : "blob", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("embeddings_scope_id")
    .on("embeddings")
    .columns(["scope", "id"])
    .execute();
  await db.schema.createIndex("embeddings_message").on("embeddings").column("message_id").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("embeddings").execute();
  await db.schema.dropTable("embedding_progress").execute();
  await db.schema.dropTable("embedding_queue").execute();
}
