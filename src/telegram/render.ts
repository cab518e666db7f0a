export { htmlToPlainText, splitMessage, TELEGRAM_MESSAGE_LIMIT } from "./chunk.js";
export { escapeHtml, renderMarkdown } from "./markdown-html.js";
