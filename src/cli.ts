import "./check-node-version.js";
import { writeSync } from "node:fs";
import { createApp } from "./app.js";
import {
  type Config,
  ConfigError,
  configuredSecrets,
  loadConfig,
  readEnvironment,
} from "./config.js";
import { createLogger } from "./logger.js";
import { runTerminalChat } from "./terminal/chat.js";
import { readableLogLines, TERMINAL_LOG_LEVEL } from "./terminal/log-lines.js";

/** `npm run chat`: the agent in this terminal, on the same database as the bot, as chat `local`. */
async function main(): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(
      { LOG_LEVEL: TERMINAL_LOG_LEVEL, ...readEnvironment() },
      { requireTelegram: false },
    );
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
  // stdout carries only the conversation; synchronous so nothing is lost at process.exit.
  const logger = createLogger({
    level: config.logLevel,
    secrets: configuredSecrets(config),
    destination: readableLogLines((line) => writeSync(2, line)),
  });
  const app = await createApp(config, logger);
  try {
    await runTerminalChat({ app, input: process.stdin, output: process.stdout });
  } finally {
    await app.mcp?.close();
    await app.database.close();
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    process.stderr.write(`Koroku's terminal chat stopped: ${reason}\n`);
    process.exit(1);
  },
);
