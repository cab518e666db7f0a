import { z } from "zod";
import { defineTool } from "./registry.js";

export function createGetCurrentTimeTool(deps: { now: () => Date; timeZone?: string }) {
  const timeZone = deps.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const localFormat = new Intl.DateTimeFormat("en-GB", {
    dateStyle: "full",
    timeStyle: "long",
    timeZone,
  });
  return defineTool({
    name: "get_current_time",
    description: "Returns the current date and time: ISO 8601 (UTC), the time zone and local time.",
    schema: z.object({}),
    async run() {
      const now = deps.now();
      return { iso: now.toISOString(), timeZone, local: localFormat.format(now) };
    },
  });
}
