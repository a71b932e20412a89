// Types of agui-bridge.js, the browser client of agui-mcp-bridge: the public API of its modules
// (docs/protocol.md is the wire contract).

export { AguiBridgeError, errorMessage } from "./errors.js";
export * from "./connection.js";
export * from "./dialogs.js";
export * from "./webmcp.js";
