import { createApp } from "./app.js";
import { ConfigError, loadConfig, readEnvironment } from "./config.js";
import { createLogger } from "./logger.js";
import { StartupError, startService } from "./telegram/service.js";

async function main(): Promise<void> {
  const config = loadConfig(readEnvironment());
  const logger = createLogger({
    level: config.logLevel,
    secrets: [config.telegramBotToken, config.geminiApiKey, config.webhook?.secret],
  });
  const app = await createApp(config, logger);
  const service = await startService(app, logger).catch(async (error: unknown) => {
    await app.database.close();
    throw error;
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "signal received");
    await service.stop();
    await app.database.close();
    logger.flush();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((error: unknown) => {
  // Errors operators can act on are printed as they are; anything else with its stack.
  const known = error instanceof ConfigError || error instanceof StartupError;
  process.stderr.write(
    `${known ? (error as Error).message : error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
