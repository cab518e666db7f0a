import { mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakes } from "./dist-bench/bench/fakes.js";
import { serviceEnv, startService, START_COMMAND, FLOOR_SERVICE_MAIN } from "./dist-bench/bench/service-process.js";
import { freePort } from "./dist-bench/test/helpers/spawn-service.js";
const which = process.argv[2];
const fakes = await startFakes();
const dataDir = mkdtempSync(join(tmpdir(), "snap-"));
const env = serviceEnv({ fakes, database: { kind: "sqlite", path: join(dataDir, "a.db") }, port: await freePort(), allowedUserIds: [1], dataDir });
const service = await startService({ env, fakes, nodeArgs: [...START_COMMAND.nodeArgs, "--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dataDir}`], ...(which === "floor" ? { main: FLOOR_SERVICE_MAIN } : {}) });
await new Promise((r) => setTimeout(r, 3000));
process.kill(service.pid, "SIGUSR2");
for (let i = 0; i < 100; i++) {
  await new Promise((r) => setTimeout(r, 300));
  const f = readdirSync(dataDir).filter((n) => n.endsWith(".heapsnapshot"));
  if (f.length && statSync(join(dataDir, f[0])).size > 0) { await new Promise((r) => setTimeout(r, 2000)); console.log(join(dataDir, f[0])); break; }
}
await service.stop?.().catch(() => {}); process.kill(service.pid, "SIGKILL"); await fakes.close(); process.exit(0);
