import { describe, expect, it } from "vitest";
import { explainDatabaseFailure } from "../../src/db/open-failures.js";

const postgres = (connectionString: string) => ({ kind: "postgres" as const, connectionString });
const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("explainDatabaseFailure on PostgreSQL", () => {
  it("names the user, server and database as pg reads the URL, never its password", () => {
    const socket = explainDatabaseFailure(
      failure("28P01", 'password authentication failed for user "koroku"'),
      postgres("postgres://koroku:s3cret-pw@/koroku_db?host=/run/postgresql"),
    ).message;
    expect(socket).toMatch(/^PostgreSQL at \/run\/postgresql rejected the password of "koroku"/);
    const queried = explainDatabaseFailure(
      failure("ECONNREFUSED", "connect ECONNREFUSED"),
      postgres("postgres://db.internal:6432/koroku?user=bot&password=s3cret-pw"),
    ).message;
    expect(queried).toMatch(/^PostgreSQL at db\.internal:6432 refused the connection/);
    expect(`${socket}${queried}`).not.toContain("s3cret-pw");
  });
});
