import { pino } from "pino";
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

/** `npm run chat`: the agent in this terminal, on the same database as the bot, as chat `local`. */
async function main(): Promise<number> {
  let config: Config;
  try {
    // Logs share the terminal with the chat: only warnings and errors unless LOG_LEVEL says otherwise.
    config = loadConfig({ LOG_LEVEL: "warn", ...readEnvironment() }, { requireTelegram: false });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
  // stdout carries only the conversation; synchronous so nothing is lost at process.exit.
  const logger = createLogger({
    level: config.logLevel,
    secrets: configuredSecrets(config),
    destination: pino.destination({ dest: 2, sync: true }),
  });
  const app = await createApp(config, logger);
  try {
    await runTerminalChat({ app, input: process.stdin, output: process.stdout });
  } finally {
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
