import "./check-node-version.js";
import { createApp } from "./app.js";
import { ConfigError, configuredSecrets, loadConfig, readEnvironment } from "./config.js";
import { Components } from "./lifecycle/components.js";
import { createLogger } from "./logger.js";
import { startService } from "./service.js";
import { StartupError } from "./startup-error.js";

// A stage of start-up that does not take the stop signal (a migration on a database that stopped
// answering) is given this long to end before the process exits anyway.
const STARTUP_ABORT_WAIT_MS = 3_000;

async function main(): Promise<void> {
  const config = loadConfig(readEnvironment());
  const logger = createLogger({
    level: config.logLevel,
    secrets: configuredSecrets(config),
  });
  // Listened for from the start and for the whole run: a signal during start-up ends start-up
  // (waiting for Telegram, for another service's lock), one after it stops the service
  // gracefully. Repeats change nothing: Ctrl-C under `npm start` comes twice, once from the
  // terminal and once forwarded by npm, and Node's default would kill the process at the second.
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) logger.info({ signal }, "already stopping");
    else stop.abort(signal);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  const stopped = new Promise<void>((resolve) =>
    stop.signal.addEventListener("abort", () => resolve(), { once: true }),
  );
  function exitStopped(): never {
    logger.info({ signal: stop.signal.reason }, "stopped during start-up");
    logger.flush();
    process.exit(0);
  }
  // After a signal, start-up ends at its next step; one that does not end soon ends with the process.
  let startupDeadline: NodeJS.Timeout | undefined;
  const stopDuringStartup = () => {
    startupDeadline = setTimeout(exitStopped, STARTUP_ABORT_WAIT_MS);
  };
  stop.signal.addEventListener("abort", stopDuringStartup, { once: true });

  const components = new Components({
    signal: stop.signal,
    onStopFailure: (component, error) =>
      logger.error({ err: error, component }, "a part of Koroku failed to stop"),
  });
  try {
    const app = await components.start({
      name: "app",
      start: () => createApp(config, logger),
      stop: (app) => app.database.close(),
    });
    await components.start({
      name: "service",
      start: (signal) => startService(app, logger, { signal }),
      stop: (service) => service.stop(),
    });
  } catch (error) {
    if (stop.signal.aborted) exitStopped();
    throw error;
  }
  stop.signal.removeEventListener("abort", stopDuringStartup);
  clearTimeout(startupDeadline);
  await stopped;
  logger.info({ signal: stop.signal.reason }, "signal received");
  await components.stop();
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
