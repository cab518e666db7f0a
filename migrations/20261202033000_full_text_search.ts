import { type Kysely, PostgresAdapter, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Full-text search for search_history (src/session/search.ts), kept up to date by the database in
 * the statement that appends, changes or deletes an event, and filled here for every event stored
 * before. Only the first 100,000 characters of an event are indexed.
 *
 * SQLite: an FTS5 table without its own copy of the text (contentless, deletable), one row per
 * event, its rowid the event's id. PostgreSQL: a generated tsvector column with a GIN index. Both cut words at anything but letters
 * and digits and do not stem ('simple'); SQLite also ignores diacritics.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    // ASCII punctuation becomes a space first: PostgreSQL's parser would keep "notes/zebra.txt"
    // or "a@b.com" as one word, where FTS5 (and the query) see "notes", "zebra" and "txt".
    await sql`alter table messages add column search_tsv tsvector generated always as (
      to_tsvector('simple'::regconfig, regexp_replace(left(search_text, 100000), '[[:punct:]]+', ' ', 'g'))
    ) stored`.execute(db);
    // New rows wait in a small pending list, merged into the index in bulk: cheap appends, and a
    // search never has much of it to scan.
    await sql`create index messages_search_tsv on messages using gin (search_tsv)
      with (gin_pending_list_limit = 256)`.execute(db);
    return;
  }
  await sql`create virtual table messages_fts using fts5(body, content='', contentless_delete=1,
    tokenize='unicode61 remove_diacritics 2')`.execute(db);
  const row = sql.raw("new.id, substr(new.search_text, 1, 100000)");
  await sql`create trigger messages_fts_insert after insert on messages begin
    insert into messages_fts (rowid, body) values (${row});
  end`.execute(db);
  await sql`create trigger messages_fts_delete after delete on messages begin
    delete from messages_fts where rowid = old.id;
  end`.execute(db);
  // Only the text is indexed (the conversation is the messages row's): a moved one needs nothing.
  await sql`create trigger messages_fts_update after update of search_text on messages begin
    delete from messages_fts where rowid = old.id;
    insert into messages_fts (rowid, body) values (${row});
  end`.execute(db);
  await sql`insert into messages_fts (rowid, body)
    select id, substr(search_text, 1, 100000) from messages`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table messages drop column search_tsv`.execute(db);
    return;
  }
  await sql`drop trigger messages_fts_update`.execute(db);
  await sql`drop trigger messages_fts_delete`.execute(db);
  await sql`drop trigger messages_fts_insert`.execute(db);
  await sql`drop table messages_fts`.execute(db);
}
