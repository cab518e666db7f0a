/**
 * Koroku's commands, as registered with setMyCommands at start-up and listed by /help. Apart from
 * their handlers: the routing (access.ts) needs their names to know a group's bare /command is
 * meant for Koroku.
 */
export const COMMANDS = [
  { command: "start", description: "What Koroku is and what it can do" },
  { command: "help", description: "The commands" },
  { command: "clear", description: "Wipe this conversation (memory files stay)" },
  {
    command: "new",
    description:
      "Start a fresh conversation that can still recall (a new topic where there are topics)",
  },
  { command: "history", description: "Replay the last n turns: /history 5" },
  { command: "status", description: "Model, context size and compaction budget" },
  { command: "compact", description: "Summarise the conversation now" },
  { command: "stop", description: "Stop the answer being written" },
  { command: "tasks", description: "Scheduled tasks and reminders, to cancel one" },
  { command: "usage", description: "Tokens and estimated cost, today and this month" },
  { command: "memory", description: "What I remember about you, to delete entries" },
  {
    command: "forget",
    description: "Forget facts and hide messages with these words: /forget words",
  },
  { command: "voice", description: "Spoken replies here: /voice on, off or auto" },
  { command: "tools", description: "MCP servers, their tools, and tools always allowed here" },
] as const;
