import { readFileSync } from "node:fs";
import { z } from "zod";

/** What happens when the model calls a tool: it runs, it waits for the user's yes, or it is refused. */
export const POLICIES = ["allow", "ask", "deny"] as const;
export type Policy = (typeof POLICIES)[number];

/** A call that takes longer is answered with an error (the server may still be working on it). */
export const DEFAULT_CALL_TIMEOUT_SECONDS = 60;
/** Text a call returns beyond this is cut: one tool must not fill the model's context. */
export const DEFAULT_MAX_OUTPUT_CHARS = 32_000;

export type McpTransport =
  | {
      kind: "stdio";
      command: string;
      args: readonly string[];
      env: Readonly<Record<string, string>>;
    }
  | { kind: "http"; url: string; headers: Readonly<Record<string, string>> };

export type McpServerConfig = {
  /** The prefix of its tools' names (`<name>__<tool>`). */
  name: string;
  transport: McpTransport;
  /** The policy of this server's tools, unless `tools` names one; unset: `ask`. */
  policy?: Policy;
  tools: Readonly<Record<string, Policy>>;
  timeoutMs: number;
  maxOutputChars: number;
};

export type McpConfig = {
  servers: readonly McpServerConfig[];
  /** Policies of Koroku's own tools, and of MCP tools by their full name (`server__tool`). */
  policies: Readonly<Record<string, Policy>>;
  /** Values taken from the environment into the file (`${VAR}`): scrubbed from logs. */
  secrets: readonly string[];
};

// The server's name is the tools' prefix: "__" in it would make `a__b__c` ambiguous.
const SERVER_NAME = /^[A-Za-z][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$/;
const MAX_SERVER_NAME = 30;

const policy = z.enum(POLICIES, { error: 'a policy is "allow", "ask" or "deny"' });
const common = {
  policy: policy.optional(),
  tools: z.record(z.string(), policy).default({}),
  timeoutSeconds: z.number().positive().max(3600).default(DEFAULT_CALL_TIMEOUT_SECONDS),
  maxOutputChars: z.number().int().min(100).max(1_000_000).default(DEFAULT_MAX_OUTPUT_CHARS),
};
const stdioSchema = z.object({
  type: z.literal("stdio").optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  ...common,
});
const httpSchema = z.object({
  type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
  url: z.string().min(1),
  headers: z.record(z.string(), z.string()).default({}),
  ...common,
});
const fileSchema = z.object({
  mcpServers: z.record(z.string(), z.unknown()).default({}),
  policies: z.record(z.string(), policy).default({}),
});

const describe = (issues: readonly z.core.$ZodIssue[]) =>
  issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ` : "") + issue.message)
    .join("; ");

/** Koroku's own secrets: no MCP server is given them, by name or by value. */
const OWN_SECRETS = [
  "TELEGRAM_BOT_TOKEN",
  "GEMINI_API_KEY",
  "WEBHOOK_SECRET",
  "METRICS_TOKEN",
  "DATABASE_URL",
] as const;
// Shorter values would be found inside unrelated words; their names are refused all the same.
const MIN_SECRET_CHARS = 8;
const NOT_OURS =
  "Koroku's own secret, which no MCP server is given: give the server a credential of its own";

/** The values of Koroku's own secrets (a PostgreSQL URL's password, not the whole URL). */
function ownSecretValues(env: Record<string, string | undefined>): [string, string][] {
  const values: [string, string][] = [];
  for (const name of OWN_SECRETS) {
    let value = env[name]?.trim() ?? "";
    if (name === "DATABASE_URL") {
      const password =
        /^postgres(ql)?:\/\//.test(value) && URL.canParse(value) ? new URL(value).password : "";
      value = decodeURIComponent(password);
    }
    if (value.length >= MIN_SECRET_CHARS) values.push([name, value]);
  }
  return values;
}

/** A line for each of Koroku's own secrets a server's settings would hand it. */
function ownSecretProblems(
  where: string,
  transport: McpTransport,
  env: Record<string, string | undefined>,
): string[] {
  const given =
    transport.kind === "stdio"
      ? [transport.command, ...transport.args, ...Object.values(transport.env)]
      : [transport.url, ...Object.values(transport.headers)];
  return ownSecretValues(env)
    .filter(([, value]) => given.some((setting) => setting.includes(value)))
    .map(([name]) => `MCP_CONFIG: ${where} holds the value of ${name}, ${NOT_OURS}`);
}

/**
 * Replaces `${VAR}` with the environment's value, so that tokens stay out of the file. A
 * variable that is not set is a problem, not an empty string: a header "Bearer " fails later, and
 * less clearly.
 */
function expand(
  value: string,
  env: Record<string, string | undefined>,
  found: string[],
  problems: string[],
  where: string,
): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    if ((OWN_SECRETS as readonly string[]).includes(name)) {
      problems.push(`MCP_CONFIG: ${where} uses \${${name}}, ${NOT_OURS}`);
      return "";
    }
    const set = env[name];
    if (set === undefined || set === "") {
      problems.push(`MCP_CONFIG: ${where} uses \${${name}}, which is not set in the environment`);
      return "";
    }
    // Short values ("1", "true") would garble every log line they were scrubbed from.
    if (set.length >= 8) found.push(set);
    return set;
  });
}

const expandRecord = (
  record: Record<string, string>,
  expandOne: (value: string, where: string) => string,
  where: string,
) =>
  Object.fromEntries(
    Object.entries(record).map(([key, value]) => [key, expandOne(value, `${where} "${key}"`)]),
  );

function parseServer(
  name: string,
  raw: unknown,
  env: Record<string, string | undefined>,
  secrets: string[],
  problems: string[],
): McpServerConfig | undefined {
  const where = `server "${name}"`;
  if (!SERVER_NAME.test(name) || name.length > MAX_SERVER_NAME) {
    problems.push(
      `MCP_CONFIG: ${where}: a server's name starts with a letter, holds letters, digits, "-" and single "_", ${MAX_SERVER_NAME} characters at most (it prefixes its tools' names)`,
    );
    return undefined;
  }
  const isObject = typeof raw === "object" && raw !== null;
  if (!isObject || (!("command" in raw) && !("url" in raw))) {
    problems.push(
      `MCP_CONFIG: ${where} needs "command" (a stdio server) or "url" (Streamable HTTP)`,
    );
    return undefined;
  }
  const expandOne = (value: string, at: string) =>
    expand(value, env, secrets, problems, `${where} ${at}`);
  const settings = (parsed: z.infer<typeof stdioSchema> | z.infer<typeof httpSchema>) => ({
    name,
    ...(parsed.policy ? { policy: parsed.policy } : {}),
    tools: parsed.tools,
    timeoutMs: parsed.timeoutSeconds * 1000,
    maxOutputChars: parsed.maxOutputChars,
  });
  if ("command" in raw) {
    const parsed = stdioSchema.safeParse(raw);
    if (!parsed.success) {
      problems.push(`MCP_CONFIG: ${where}: ${describe(parsed.error.issues)}`);
      return undefined;
    }
    const { command, args, env: childEnv } = parsed.data;
    return {
      ...settings(parsed.data),
      transport: {
        kind: "stdio",
        command: expandOne(command, "command"),
        args: args.map((arg) => expandOne(arg, "args")),
        env: expandRecord(childEnv, expandOne, "env"),
      },
    };
  }
  const parsed = httpSchema.safeParse(raw);
  if (!parsed.success) {
    problems.push(`MCP_CONFIG: ${where}: ${describe(parsed.error.issues)}`);
    return undefined;
  }
  const url = expandOne(parsed.data.url, "url");
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    problems.push(`MCP_CONFIG: ${where}: "url" must be an http or https URL`);
    return undefined;
  }
  return {
    ...settings(parsed.data),
    transport: {
      kind: "http",
      url,
      headers: expandRecord(parsed.data.headers, expandOne, "headers"),
    },
  };
}

/**
 * Reads an `mcpServers` file (Claude Desktop's format, with Koroku's policies beside it). Every
 * problem is one line in `problems`; the config is undefined when there is any.
 */
export function readMcpConfig(
  path: string,
  env: Record<string, string | undefined>,
): { config?: McpConfig; problems: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "no such file"
        : error instanceof SyntaxError
          ? `not valid JSON (${error.message})`
          : (error as Error).message;
    return { problems: [`MCP_CONFIG: cannot read ${path}: ${why}`] };
  }
  const file = fileSchema.safeParse(json);
  if (!file.success) return { problems: [`MCP_CONFIG: ${path}: ${describe(file.error.issues)}`] };
  const problems: string[] = [];
  const secrets: string[] = [];
  const servers = Object.entries(file.data.mcpServers).flatMap(([name, raw]) => {
    const server = parseServer(name, raw, env, secrets, problems);
    if (!server) return [];
    problems.push(...ownSecretProblems(`server "${name}"`, server.transport, env));
    return [server];
  });
  if (problems.length > 0) return { problems };
  return { config: { servers, policies: file.data.policies, secrets }, problems };
}
