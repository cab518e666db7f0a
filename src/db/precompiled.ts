import type { Compilable, CompiledQuery, Kysely, QueryResult } from "kysely";

/** Stands for one argument of a statement while it is compiled, in its parameters. */
class Slot {
  constructor(readonly name: string) {}
}

export type Precompiled<Args, Row> = {
  /** The statement for `args`: what `build(args).compile()` gives, without building it. */
  compile(args: Args): CompiledQuery<Row>;
  /** Runs the statement for `args`, on the database it was made for or a transaction of it. */
  run(args: Args, on?: Executor): Promise<QueryResult<Row>>;
};

/** What runs a compiled statement: a Kysely instance, or a transaction of one. */
export type Executor = {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
};

/**
 * A statement built and compiled once, then run with other values. Kysely builds a tree of
 * frozen nodes and compiles it to SQL on every run; for the statements every turn runs that costs
 * more CPU than the database's own work on them (docs/decisions/0011-cpu-per-turn.md).
 *
 * `build` gets stand-ins for its arguments and must put each, as it is, into the statement as a
 * value: an argument that chose the statement's shape (a column left out when undefined, a list
 * of values, a branch) would be fixed at its stand-in.
 */
export function precompiled<DB, Args extends object, Row>(
  db: Kysely<DB>,
  build: (args: Args) => Compilable<Row>,
): Precompiled<Args, Row> {
  let template: CompiledQuery<Row> | undefined;
  const stand = (): CompiledQuery<Row> => {
    const slots = new Map<string, Slot>();
    const args = new Proxy({} as Args, {
      get: (_, name) => {
        if (typeof name !== "string") return undefined;
        const slot = slots.get(name) ?? new Slot(name);
        slots.set(name, slot);
        return slot;
      },
    });
    const compiled = build(args).compile();
    for (const slot of slots.values()) {
      if (!compiled.parameters.includes(slot)) {
        throw new Error(
          `precompiled statement: argument "${slot.name}" is not one of its values (${compiled.sql})`,
        );
      }
    }
    return compiled;
  };
  const compile = (args: Args): CompiledQuery<Row> => {
    template ??= stand();
    return {
      ...template,
      parameters: template.parameters.map((value) =>
        value instanceof Slot ? (args as Record<string, unknown>)[value.name] : value,
      ),
    };
  };
  return {
    compile,
    run: (args, on = db) => on.executeQuery(compile(args)),
  };
}
