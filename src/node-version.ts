/** The oldest Node.js major Koroku runs on; package.json's `engines` says the same (a test checks). */
export const MINIMUM_NODE_MAJOR = 22;

/** What is wrong with this Node.js version, in one line a user can act on, or undefined. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MINIMUM_NODE_MAJOR) return undefined;
  return `Koroku needs Node.js ${MINIMUM_NODE_MAJOR} or newer (24 LTS recommended); this is Node.js ${version}. Install a newer Node.js and run npm install again.`;
}
