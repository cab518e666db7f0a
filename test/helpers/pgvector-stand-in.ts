import { type Kysely, sql } from "kysely";
import type { Database } from "../../src/db/schema.js";

/**
 * pgvector cannot be installed on the test machines, so the query of the pgvector engine
 * (src/recall/vector-search.ts) runs against a stand-in for as much of it as that query uses: a
 * type `vector` that `real[]` casts to, and `<=>`, the cosine distance. It goes into the test's
 * own schema, and is not an extension: hasPgvector() still answers false, so nothing else
 * switches engines.
 */
export async function installPgvectorStandIn(db: Kysely<Database>): Promise<void> {
  await sql`create domain vector as real[]`.execute(db);
  await sql`create function cosine_distance(a real[], b real[]) returns double precision
    language sql immutable strict
    as $$ select 1 - sum(x * y) / (sqrt(sum(x * x)) * sqrt(sum(y * y))) from unnest(a, b) as t(x, y) $$`.execute(
    db,
  );
  await sql`create operator <=> (leftarg = real[], rightarg = real[], function = cosine_distance)`.execute(
    db,
  );
}
