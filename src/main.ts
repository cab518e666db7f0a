import { createApp } from "./app.js";
import { ConfigError, loadConfig, readEnvironment } from "./config.js";
import { createLogger } from "./logger.js";
import { StartupError, startService } from "./service.js";

async function main(): Promise<void> {
  const config = loadConfig(readEnvironment());
  const logger = createLogger({
    level: config.logLevel,
    secrets: [config.telegramBotToken, config.geminiApiKey, config.webhook?.secret],
  });
  // Listened for from the start: a signal that comes while the service starts (or just as it
  // has) stops it gracefully once it is up, instead of killing the process on the spot.
  let signalled: (signal: string) => void = () => {};
  const signal = new Promise<string>((resolve) => {
    signalled = resolve;
  });
  process.once("SIGTERM", () => signalled("SIGTERM"));
  process.once("SIGINT", () => signalled("SIGINT"));

  const app = await createApp(config, logger);
  const service = await startService(app, logger).catch(async (error: unknown) => {
    await app.database.close();
    throw error;
  });
  logger.info({ signal: await signal }, "signal received");
  await service.stop();
  await app.database.close();
  logger.flush();
  process.exit(0);
}

main().catch((error: unknown) => {
  // Errors operators can act on are printed as they are; anything else with its stack.
  const known = error instanceof ConfigError || error instanceof StartupError;
  process.stderr.write(
    `${known ? (error as Error).message : error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
