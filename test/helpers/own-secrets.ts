/** Koroku's own secrets as its environment holds them: what no MCP server may be given. */
export const OWN_SECRETS_ENV = {
  TELEGRAM_BOT_TOKEN: "123456:the-bot-token",
  GEMINI_API_KEY: "the-gemini-api-key",
  WEBHOOK_SECRET: "the-webhook-secret",
  // A password as a URL holds it, percent-encoded: "db/password".
  DATABASE_URL: "postgres://koroku:db%2Fpassword@db/koroku",
} as const;
