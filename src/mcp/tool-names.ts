/**
 * Separates an MCP server's name from its tool's in the names Gemini sees (`<server>__<tool>`).
 * A module of its own, so that what names tools does not load the MCP SDK.
 */
export const NAME_SEPARATOR = "__";
