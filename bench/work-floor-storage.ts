import SQLite from "better-sqlite3";
import pg from "pg";

/**
 * What the work floor (bench/work-floor-service.ts) stores a turn, on SQLite through
 * better-sqlite3's prepared statements (WAL, synchronous NORMAL, as Koroku) or on PostgreSQL
 * through a pg pool with named prepared statements, each the plainest way its driver offers.
 * `target` is a file path, or a postgres:// URL.
 */
export type FloorStorage = {
  /** The update, before the webhook is answered; a redelivered one is ignored. */
  store(updateId: number, chatId: number, body: string): Promise<void>;
  claim(updateId: number): Promise<void>;
  finish(updateId: number): Promise<void>;
  /** The chat's events, oldest first, as stored. */
  history(chatId: number): Promise<string[]>;
  /** Stores an event with its text for the full-text index; its id. */
  append(chatId: number, body: string, text: string): Promise<number>;
  used(chatId: number, input: number, output: number): Promise<void>;
  storeVectors(ids: readonly number[], vectors: readonly Float32Array[]): Promise<void>;
};

/** The courier's one statement: the sent message's id, recorded on its own connection. */
export type FloorDeliveredRecord = (updateId: number, messageIds: string) => Promise<void>;

const isPostgres = (target: string) => /^postgres(ql)?:\/\//.test(target);

export function openFloorStorage(target: string): Promise<FloorStorage> {
  return isPostgres(target) ? postgresStorage(target) : Promise.resolve(sqliteStorage(target));
}

export function openDeliveredRecord(target: string): FloorDeliveredRecord {
  if (isPostgres(target)) {
    const pool = new pg.Pool({ connectionString: target, max: 4 });
    const text = "UPDATE inbox SET delivered = $1 WHERE update_id = $2";
    return async (updateId, messageIds) => {
      await pool.query({ name: "delivered", text, values: [messageIds, updateId] });
    };
  }
  const db = new SQLite(target);
  db.pragma("synchronous = NORMAL");
  const delivered = db.prepare("UPDATE inbox SET delivered = ? WHERE update_id = ?");
  return async (updateId, messageIds) => {
    delivered.run(messageIds, updateId);
  };
}

function sqliteStorage(path: string): FloorStorage {
  const db = new SQLite(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(`
    CREATE TABLE inbox (update_id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL, body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'new', delivered TEXT);
    CREATE TABLE events (id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL, body TEXT NOT NULL,
      text TEXT NOT NULL);
    CREATE INDEX events_by_chat ON events (chat_id, id);
    CREATE VIRTUAL TABLE events_fts USING fts5(text, content='events', content_rowid='id');
    CREATE TRIGGER events_indexed AFTER INSERT ON events BEGIN
      INSERT INTO events_fts (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TABLE usage (id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL, input INTEGER NOT NULL,
      output INTEGER NOT NULL, at INTEGER NOT NULL);
    CREATE TABLE vectors (event_id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
  `);
  const store = db.prepare(
    "INSERT OR IGNORE INTO inbox (update_id, chat_id, body) VALUES (?, ?, ?)",
  );
  const claim = db.prepare(
    "UPDATE inbox SET state = 'running' WHERE update_id = ? AND state = 'new'",
  );
  const finish = db.prepare("UPDATE inbox SET state = 'done' WHERE update_id = ?");
  const history = db.prepare<[number], { body: string }>(
    "SELECT body FROM events WHERE chat_id = ? ORDER BY id",
  );
  const append = db.prepare("INSERT INTO events (chat_id, body, text) VALUES (?, ?, ?)");
  const used = db.prepare("INSERT INTO usage (chat_id, input, output, at) VALUES (?, ?, ?, ?)");
  const vector = db.prepare("INSERT INTO vectors (event_id, vector) VALUES (?, ?)");
  const storeVectors = db.transaction(
    (ids: readonly number[], vectors: readonly Float32Array[]) => {
      for (const [i, id] of ids.entries()) {
        vector.run(id, Buffer.from((vectors[i] as Float32Array).buffer));
      }
    },
  );
  return {
    store: async (updateId, chatId, body) => {
      store.run(updateId, chatId, body);
    },
    claim: async (updateId) => {
      claim.run(updateId);
    },
    finish: async (updateId) => {
      finish.run(updateId);
    },
    history: async (chatId) => history.all(chatId).map((row) => row.body),
    append: async (chatId, body, text) => Number(append.run(chatId, body, text).lastInsertRowid),
    used: async (chatId, input, output) => {
      used.run(chatId, input, output, Date.now());
    },
    storeVectors: async (ids, vectors) => {
      storeVectors(ids, vectors);
    },
  };
}

/** Events indexed as Koroku's PostgreSQL schema indexes them: a generated tsvector, a GIN index. */
async function postgresStorage(url: string): Promise<FloorStorage> {
  // As many connections as Koroku's pool at its defaults.
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(`
    CREATE TABLE inbox (update_id bigint PRIMARY KEY, chat_id bigint NOT NULL, body text NOT NULL,
      state text NOT NULL DEFAULT 'new', delivered text);
    CREATE TABLE events (id bigserial PRIMARY KEY, chat_id bigint NOT NULL, body text NOT NULL,
      text text NOT NULL,
      search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig,
        regexp_replace(left(text, 100000), '[[:punct:]]+', ' ', 'g'))) STORED);
    CREATE INDEX events_by_chat ON events (chat_id, id);
    CREATE INDEX events_search ON events USING gin (search_tsv) WITH (gin_pending_list_limit = 256);
    CREATE TABLE usage (id bigserial PRIMARY KEY, chat_id bigint NOT NULL, input integer NOT NULL,
      output integer NOT NULL, at bigint NOT NULL);
    CREATE TABLE vectors (event_id bigint PRIMARY KEY, vector real[] NOT NULL);
  `);
  const run = (name: string, text: string, values: unknown[]) => pool.query({ name, text, values });
  return {
    store: async (updateId, chatId, body) => {
      await run(
        "store",
        "INSERT INTO inbox (update_id, chat_id, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        [updateId, chatId, body],
      );
    },
    claim: async (updateId) => {
      await run(
        "claim",
        "UPDATE inbox SET state = 'running' WHERE update_id = $1 AND state = 'new'",
        [updateId],
      );
    },
    finish: async (updateId) => {
      await run("finish", "UPDATE inbox SET state = 'done' WHERE update_id = $1", [updateId]);
    },
    history: async (chatId) => {
      const { rows } = await run(
        "history",
        "SELECT body FROM events WHERE chat_id = $1 ORDER BY id",
        [chatId],
      );
      return rows.map((row: { body: string }) => row.body);
    },
    append: async (chatId, body, text) => {
      const { rows } = await run(
        "append",
        "INSERT INTO events (chat_id, body, text) VALUES ($1, $2, $3) RETURNING id",
        [chatId, body, text],
      );
      return Number((rows[0] as { id: string }).id);
    },
    used: async (chatId, input, output) => {
      await run("used", "INSERT INTO usage (chat_id, input, output, at) VALUES ($1, $2, $3, $4)", [
        chatId,
        input,
        output,
        Date.now(),
      ]);
    },
    storeVectors: async (ids, vectors) => {
      // One statement for the batch, each vector as its real[] literal, as Koroku sends them.
      const values = ids.map((_, i) => `($${2 * i + 1}, $${2 * i + 2}::real[])`).join(", ");
      await pool.query(`INSERT INTO vectors (event_id, vector) VALUES ${values}`, [
        ...ids.flatMap((id, i) => [id, `{${(vectors[i] as Float32Array).join(",")}}`]),
      ]);
    },
  };
}
