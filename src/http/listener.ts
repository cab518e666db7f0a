import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { StartupError } from "../startup-error.js";

export type Listener = {
  /** The address it listens on (PORT=0 picks a free port). */
  address: AddressInfo;
  /** Takes no new connections; those open are served until close. */
  stopTaking(): void;
  /** Ends every connection left and waits until the server has closed. */
  close(): Promise<void>;
};

/** A port someone else listens on, said in one line: most often a Koroku that is still running. */
function listenFailure(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") {
    return new StartupError(
      `Port ${port} on ${host} is already in use: another Koroku may still be running (stop it), or set PORT to a free port.`,
    );
  }
  if (code === "EACCES") {
    return new StartupError(
      `Port ${port} on ${host} needs privileges this process lacks: set PORT to 1024 or above.`,
    );
  }
  return error;
}

/** Listens with `server` on `host`:`port`; a port that cannot be had is said so. */
export async function listen(server: Server, host: string, port: number): Promise<Listener> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(listenFailure(error, host, port)));
    server.listen(port, host, () => resolve());
  });
  let closed: Promise<void> | undefined;
  const stopTaking = () => {
    closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
  };
  return {
    address: server.address() as AddressInfo,
    stopTaking,
    async close() {
      stopTaking();
      server.closeAllConnections();
      await closed;
    },
  };
}
