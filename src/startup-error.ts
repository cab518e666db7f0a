/**
 * A start-up failure the operator can act on: its message says in one line what went wrong and
 * what to do, and is printed without a stack (src/main.ts).
 */
export class StartupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StartupError";
  }
}
