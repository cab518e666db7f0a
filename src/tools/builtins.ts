import type { Workspaces } from "../scope/workspaces.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import { createGetCurrentTimeTool } from "./get-current-time.js";
import { createListFilesTool } from "./list-files.js";
import { createReadFileTool } from "./read-file.js";
import { createReadMemoryTool } from "./read-memory.js";
import type { Tool } from "./registry.js";
import { createRunCommandTool } from "./run-command.js";
import { createSearchHistoryTool, type SearchHistory } from "./search-history.js";
import { createSendFileTool } from "./send-file.js";
import { createWriteFileTool } from "./write-file.js";

export interface BuiltinToolDeps {
  /** WORKSPACE_DIR, one folder per recall scope. */
  workspaces: Workspaces;
  memoryDir: string;
  /** ENABLE_SHELL_TOOL: without it the model never learns run_command exists. */
  enableShell: boolean;
  search: SearchHistory;
  /** Stores a file send_file sent as an attachment of the conversation. */
  saveFile(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
  /** IANA zone the clock tool reports local time in (TIME_ZONE). */
  timeZone?: string;
  /** Tools of other concerns (scheduled tasks) offered beside these. */
  extra?: readonly Tool[];
  now?: () => Date;
}

export function createBuiltinTools(deps: BuiltinToolDeps): Tool[] {
  const { workspaces } = deps;
  const tools: Tool[] = [
    createGetCurrentTimeTool({ now: deps.now ?? (() => new Date()), timeZone: deps.timeZone }),
    createListFilesTool({ workspaces }),
    createReadFileTool({ workspaces }),
    createWriteFileTool({ workspaces }),
    createSendFileTool({ workspaces, saveFile: deps.saveFile }),
    createReadMemoryTool({ memoryDir: deps.memoryDir }),
    createSearchHistoryTool({ search: deps.search }),
    ...(deps.extra ?? []),
  ];
  if (deps.enableShell) tools.push(createRunCommandTool({ workspaces }));
  return tools;
}
