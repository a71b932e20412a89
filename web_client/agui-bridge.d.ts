// Types of agui-bridge.js, the browser client of agui-mcp-bridge: the public API of its modules
// (docs/protocol.md is the wire contract).

import type { AguiBridge, ConnectOptions } from "./connection.js";

export { AguiBridgeError, errorMessage } from "./errors.js";
export * from "./connection.js";
export * from "./dialogs.js";
export * from "./webmcp.js";
export { formToolDefinition, serveForms } from "./forms.js";
export type { AgentSubmitEvent, FormSubmission, FormToolsHandle, ServeFormsOptions } from "./forms.js";

export interface PageConnectOptions extends ConnectOptions {
  /**
   * Serve the page's `<form toolname>`s as tools (`serveForms()`, declarative WebMCP): default true;
   * false leaves the forms alone.
   */
  forms?: boolean;
}

/**
 * Connect a page to the bridge (connection.js's `connect()`: resolves once connected, waiting for a
 * bridge that is not up yet; rejects only on a refusal retrying cannot fix), then serve the page's
 * `<form toolname>`s as tools unless `forms: false`.
 */
// Declared here, it takes the place of connection.js's `connect` among the names re-exported above.
export declare function connect(options?: PageConnectOptions): Promise<AguiBridge>;
