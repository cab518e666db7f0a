import type { Compilable, CompiledQuery, QueryResult } from "kysely";

type Executor = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/**
 * A Kysely query built and compiled once, then run with new values. Building a query costs more
 * than SQLite needs to run a simple one, so the queries every turn runs are built here. `build`
 * gets stand-ins for its arguments and must pass them to Kysely as values (no arithmetic on them):
 * each becomes a bound parameter that is swapped for the real value on every run.
 */
export function prepareQuery<A extends readonly unknown[], R>(
  db: Executor,
  arity: A["length"],
  build: (...args: A) => Compilable<R>,
): (args: A) => Promise<QueryResult<R>> {
  const standIns = Array.from({ length: arity }, (_, i) => `\u0000prepared-argument-${i}\u0000`);
  const compiled = build(...(standIns as unknown as A)).compile();
  // For each parameter: the argument it stands for, or -1 for a value fixed at build time.
  const sources = compiled.parameters.map((value) => standIns.indexOf(value as string));
  for (let i = 0; i < arity; i++) {
    if (!sources.includes(i)) {
      throw new Error(`prepareQuery: argument ${i} never reached the SQL as a parameter`);
    }
  }
  return (args) =>
    db.executeQuery({
      ...compiled,
      parameters: sources.map((source, i) => (source >= 0 ? args[source] : compiled.parameters[i])),
    });
}
