/**
 * The oldest Node.js Koroku runs on; package.json's `engines` says the same (a test checks).
 * better-sqlite3 13 is built for Node-API 10, which Node has from 22.14.0 on: on an older 22 it
 * crashes (a segmentation fault, not an error) when it opens the database.
 */
export const MINIMUM_NODE = { major: 22, minor: 14 } as const;
export const MINIMUM_NODE_VERSION = `${MINIMUM_NODE.major}.${MINIMUM_NODE.minor}`;

/** What is wrong with this Node.js version, in one line a user can act on, or undefined. */
export function nodeVersionProblem(version: string): string | undefined {
  const [, major = 0, minor = 0] = (/^v?(\d+)\.(\d+)\./.exec(version) ?? []).map(Number);
  const newEnough =
    major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor);
  if (newEnough) return undefined;
  return `Koroku needs Node.js ${MINIMUM_NODE_VERSION} or newer (24 LTS recommended); this is Node.js ${version}. Install a newer Node.js and run npm install again.`;
}
