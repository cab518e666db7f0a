/** Longest argument quoted in a status line; a longer one is cut with an ellipsis. */
const MAX_ARG = 60;

const clip = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? "");
  return text.length > MAX_ARG ? `${text.slice(0, MAX_ARG - 1)}…` : text;
};

/**
 * What the user is told while a tool runs ("Reading notes.txt…"), in words rather than the
 * tool's name. Tools not listed (Gemini's own, ones added later) get a generic line.
 */
export function toolStatus(name: string, args: Record<string, unknown>): string {
  switch (name) {
    case "read_file":
      return `Reading ${clip(args.path)}…`;
    case "write_file":
      return `Writing ${clip(args.path)}…`;
    case "list_files":
      return args.path ? `Looking at the files in ${clip(args.path)}…` : "Looking at the files…";
    case "send_file":
      return `Sending ${clip(args.path)}…`;
    case "read_memory":
      return "Reading my notes…";
    case "search_history":
      return `Searching our history for ${clip(args.query)}…`;
    case "generate_image":
      return args.edit ? "🎨 changing the picture…" : "🎨 drawing…";
    case "get_current_time":
      return "Checking the time…";
    case "run_command":
      return `Running ${clip(args.command)}…`;
    case "schedule_task":
      return "Scheduling a task…";
    case "list_tasks":
      return "Looking at the scheduled tasks…";
    case "cancel_task":
      return "Cancelling a task…";
    default:
      return `Using ${name}…`;
  }
}
