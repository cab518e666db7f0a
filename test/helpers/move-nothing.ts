import type { MoveConversation } from "../../src/telegram/inbound/chat-migration.js";

/** For bots built without a service: a group's move to its supergroup finds nothing to move. */
export const moveNothing: MoveConversation = async () => ({
  events: 0,
  memoryFiles: 0,
  tasks: 0,
  workspaceFiles: 0,
  profileEntries: 0,
  voiceSettings: 0,
  usageRows: 0,
  toolGrants: 0,
});
