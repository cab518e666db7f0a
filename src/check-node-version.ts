import { nodeVersionProblem } from "./node-version.js";

// Imported first by the entry points, so that it runs before any module that needs a newer Node
// (better-sqlite3 13 and the Gemini SDK 3 fail on Node 20 with errors that do not say why).
const problem = nodeVersionProblem(process.version);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
