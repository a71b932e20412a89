/**
 * agui-bridge.js — the browser client of agui-mcp-bridge: one URL to import, no build step, no
 * dependencies. It re-exports the public API of the modules beside it:
 *
 *   connection.js  connect(), AguiBridge — the page's side of the protocol: session resume (also
 *                  across a reload), tool registration (registrations.js), invocations (calls.js),
 *                  over its transport (transport.js: socket, event stream, retries, pagehide)
 *   dialogs.js     confirmDialog(), promptDialog(), chooseDialog(), registerUserTools()
 *   webmcp.js      bridgeWebMCP() — serve the tools of `document.modelContext` (W3C WebMCP)
 *   forms.js       serveForms() — serve every `<form toolname>` of the page (declarative WebMCP)
 *   errors.js      AguiBridgeError, errorMessage()
 *
 *   import { connect, registerUserTools } from "http://127.0.0.1:8765/client/agui-bridge.js";
 *   const bridge = await connect({ room: "default" });   // waits for a bridge that is not up yet;
 *                                                        // serves the page's <form toolname>s as tools
 *   await bridge.registerTool(
 *     { name: "read_cart", description: "The items in the cart.", inputSchema: { type: "object" } },
 *     async (params, { signal, progress }) => ({ items: cart.items }),
 *   );
 *   await registerUserTools(bridge);   // agui_user_confirm, agui_user_prompt, agui_user_choose
 *
 * Types: agui-bridge.d.ts. The wire contract: docs/protocol.md.
 */
/** @import * as types from "./agui-bridge.js" */
import { connect as connectPage } from "./connection.js";
import { serveForms } from "./forms.js";

export { AguiBridgeError, errorMessage } from "./errors.js";
export { AguiBridge, STATES } from "./connection.js";
export { USER_TOOLS, UserCancelledError, chooseDialog, confirmDialog, promptDialog, registerUserTools } from "./dialogs.js";
export { bridgeWebMCP } from "./webmcp.js";
export { formToolDefinition, serveForms } from "./forms.js";

/**
 * connection.js's connect(), and then the page's `<form toolname>`s are served as tools (unless
 * `forms: false`): a page offers its forms to agents without a line of code of its own.
 * @type {typeof types.connect}
 */
export async function connect(options = {}) {
  const bridge = await connectPage(options);
  if (options.forms !== false && globalThis.document) serveForms(bridge);
  return bridge;
}
