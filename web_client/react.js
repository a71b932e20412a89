/**
 * react.js — React hooks for agui-mcp-bridge (`import … from "agui-mcp-bridge/react"`).
 *
 *   <BridgeProvider url="http://127.0.0.1:8765/">   one connection for the components inside it, which serves
 *                                                   the page's <form toolname>s as tools (forms={false}: not)
 *     useBridgeTool({ name, description, inputSchema, handler })   a tool while the component is mounted
 *     useUserTools()                                the built-in confirm / prompt / choose dialogs
 *     useBridgeStatus()                             "connecting" | "connected" | "reconnecting" | "refused" | "closed"
 *
 * The connection is the plain client's (connection.js): it waits for a bridge that is not up yet,
 * reconnects, and registers the tools again after each reconnection. A handler is read at each
 * call, so it sees the state of the render current then without the tool being registered again.
 * Types: react.d.ts. The bridge serves this file at /client/react.js too; "react" is a bare
 * import, so it needs a bundler (or an import map).
 */
/** @import * as types from "./react.js" */
import { createContext, createElement, useContext, useEffect, useLayoutEffect, useRef, useState } from "react";
import { AguiBridge } from "./connection.js";
import { registerUserTools } from "./dialogs.js";
import { AguiBridgeError } from "./errors.js";
import { serveForms } from "./forms.js";

/**
 * @typedef {{bridge: AguiBridge | null, status: types.BridgeStatus}} BridgeContextValue
 */

/** @type {import("react").Context<BridgeContextValue | null>} */
const BridgeContext = createContext(/** @type {BridgeContextValue | null} */ (null));

// A layout effect updates the handler before the browser paints (and before any call can come in);
// without a document (server rendering) React warns about layout effects, and there is nothing to update.
const useCommitEffect = typeof document === "undefined" ? useEffect : useLayoutEffect;

/** @type {Record<import("./connection.js").ConnectionState, types.BridgeStatus>} */
const STATUS = { connecting: "connecting", open: "connected", reconnecting: "reconnecting", closed: "closed" };

/** @type {typeof types.BridgeProvider} */
export function BridgeProvider({ url, room = "default", token = null, options, forms = true, onError, children }) {
  const [value, setValue] = useState(/** @type {BridgeContextValue} */ ({ bridge: null, status: "connecting" }));
  const { bridge } = value;
  // Read when connecting, not watched: an inline object or arrow would otherwise reconnect at each render.
  const latest = useRef({ options, onError });
  useCommitEffect(() => {
    latest.current = { options, onError };
  });

  useEffect(() => {
    const bridge = new AguiBridge({ ...latest.current.options, url, room, token });
    let refused = false;
    /** @param {types.BridgeStatus} status */
    const show = (status) => setValue({ bridge, status });
    /** @param {Event} event */
    const onStateChange = (event) => {
      const { state } = /** @type {CustomEvent<{state: import("./connection.js").ConnectionState}>} */ (event).detail;
      if (!refused) show(STATUS[state]);
    };
    /** @param {Event} event */
    const onBridgeError = (event) => {
      const detail = /** @type {CustomEvent<import("./connection.js").BridgeErrorDetail>} */ (event).detail;
      latest.current.onError?.(new AguiBridgeError(detail.message, { code: detail.code, detail }));
    };
    bridge.addEventListener("statechange", onStateChange);
    bridge.addEventListener("error", onBridgeError);
    show("connecting");
    bridge.start().catch((/** @type {unknown} */ error) => {
      if (error instanceof AguiBridgeError && error.code === "closed") return; // unmounted, or props changed
      refused = true;
      show("refused");
      latest.current.onError?.(error instanceof AguiBridgeError ? error
        : new AguiBridgeError(String(error), { code: "refused" }));
    });
    return () => {
      bridge.removeEventListener("statechange", onStateChange);
      bridge.removeEventListener("error", onBridgeError);
      bridge.disconnect();
    };
  }, [url, room, token]);

  // The page's forms, as connect() serves them: registered now, sent once the bridge welcomes the page
  // (as the hooks' tools); a refused connection is closed, and serves none.
  useEffect(() => {
    if (!bridge || bridge.state === "closed" || forms === false || typeof document === "undefined") return;
    const serving = new AbortController();
    serveForms(bridge, { signal: serving.signal });
    return () => serving.abort();
  }, [bridge, forms]);

  return createElement(BridgeContext.Provider, { value }, children);
}

/** @param {string} hook */
function useBridgeContext(hook) {
  const value = useContext(BridgeContext);
  if (value === null) throw new Error(`${hook}() must be called inside a <BridgeProvider>.`);
  return value;
}

/** @type {typeof types.useBridge} */
export function useBridge() {
  return useBridgeContext("useBridge").bridge;
}

/** @type {typeof types.useBridgeStatus} */
export function useBridgeStatus() {
  return useBridgeContext("useBridgeStatus").status;
}

/** @type {typeof types.useBridgeTool} */
export function useBridgeTool(tool) {
  const { bridge } = useBridgeContext("useBridgeTool");
  const { handler, ...definition } = tool;
  const [registration, setRegistration] = useState(
    /** @type {types.BridgeToolRegistration} */ ({ mcpName: null, error: null }));
  const current = useRef(handler);
  useCommitEffect(() => {
    current.current = handler;
  });
  // The definition is compared by value: schemas written inline are new objects at each render.
  const key = JSON.stringify(definition);

  useEffect(() => {
    if (!bridge) return;
    /** @type {import("./connection.js").ToolDefinition} */
    const registered = JSON.parse(key);
    const registration = new AbortController();
    setRegistration({ mcpName: null, error: null });
    bridge.registerTool(registered, (args, context) => current.current(/** @type {any} */ (args), context), { signal: registration.signal })
      .then(
        (mcpName) => registration.signal.aborted || setRegistration({ mcpName, error: null }),
        (error) => registration.signal.aborted || setRegistration({ mcpName: null, error }),
      );
    return () => registration.abort("The component that registered the tool was unmounted.");
  }, [bridge, key]);

  return registration;
}

/** @type {typeof types.useUserTools} */
export function useUserTools(options = {}) {
  const { bridge } = useBridgeContext("useUserTools");
  const [names, setNames] = useState(/** @type {Awaited<ReturnType<typeof registerUserTools>> | null} */ (null));
  const key = JSON.stringify(options);

  useEffect(() => {
    if (!bridge) return;
    const registration = new AbortController();
    registerUserTools(bridge, { ...JSON.parse(key), signal: registration.signal }).then(
      (registered) => registration.signal.aborted || setNames(registered),
      () => {}, // unmounted first, or the connection was refused: useBridgeStatus() says which
    );
    return () => registration.abort("The component that registered the user tools was unmounted.");
  }, [bridge, key]);

  return names;
}
