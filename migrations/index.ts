import type { Migration } from "kysely/migration";
import * as createMessagesAndInbox from "./20261130000100_create_messages_and_inbox.js";
import * as inboxDelivered from "./20261201000100_inbox_delivered.js";
import * as pendingTopicNames from "./20261202011500_pending_topic_names.js";
import * as attachments from "./20261202020000_attachments.js";
import * as scheduledTasks from "./20261202030000_scheduled_tasks.js";
import * as fullTextSearch from "./20261202033000_full_text_search.js";
import * as modelUsage from "./20261202040000_model_usage.js";
import * as inboxAlbums from "./20261203010000_inbox_albums.js";
import * as inboxLiveMessages from "./20261203020000_inbox_live_messages.js";
import * as inboxStopRequested from "./20261203030000_inbox_stop_requested.js";
import * as geminiFiles from "./20261203040000_gemini_files.js";
import * as taskLimits from "./20261203050000_task_limits.js";
import * as inboxToolFiles from "./20261203060000_inbox_tool_files.js";
import * as toolApprovals from "./20261203090000_tool_approvals.js";
import * as recallScopes from "./20261203100000_recall_scopes.js";
import * as profilesAndForgetting from "./20261203110000_profiles_and_forgetting.js";
import * as embeddings from "./20261203120000_embeddings.js";
import * as conversationVoice from "./20261203150000_conversation_voice.js";
import * as embeddingModel from "./20261205120000_embedding_model.js";

/** Every migration, by name; names sort in the order they must run. Add new files here. */
export const migrations: Record<string, Migration> = {
  "20261130000100_create_messages_and_inbox": createMessagesAndInbox,
  "20261201000100_inbox_delivered": inboxDelivered,
  "20261202011500_pending_topic_names": pendingTopicNames,
  "20261202020000_attachments": attachments,
  "20261202030000_scheduled_tasks": scheduledTasks,
  "20261202033000_full_text_search": fullTextSearch,
  "20261202040000_model_usage": modelUsage,
  "20261203010000_inbox_albums": inboxAlbums,
  "20261203020000_inbox_live_messages": inboxLiveMessages,
  "20261203030000_inbox_stop_requested": inboxStopRequested,
  "20261203040000_gemini_files": geminiFiles,
  "20261203050000_task_limits": taskLimits,
  "20261203060000_inbox_tool_files": inboxToolFiles,
  "20261203100000_recall_scopes": recallScopes,
  "20261203110000_profiles_and_forgetting": profilesAndForgetting,
  "20261203120000_embeddings": embeddings,
  "20261203150000_conversation_voice": conversationVoice,
  "20261205120000_embedding_model": embeddingModel,
  "20261203090000_tool_approvals": toolApprovals,
};
