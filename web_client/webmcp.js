/**
 * webmcp.js — the W3C WebMCP adapter: bridgeWebMCP() serves the tools a page registers with
 * `document.modelContext` through the bridge. Types: webmcp.d.ts.
 *
 * It serves the runtimes of both shapes: Chrome 152–154 and MCP-B's polyfill 5.x, whose
 * `executeTool()` takes the input as JSON text, and Chrome 155 on (the draft), whose
 * `executeTool()` takes an object and whose tools' `execute(input, {signal})` can be cancelled.
 */
/** @import * as types from "./webmcp.js" */
/** @import { ObjectSchema, ToolDefinition, ToolHandler, ToolResult } from "./connection.js" */
import { errorMessage } from "./errors.js";
import { servesFormTool } from "./forms.js";

/** @typedef {string | Record<string, unknown>} ToolInput  what `executeTool()` takes: JSON text or an object */
/**
 * Chromium's testing API, which can run tools registered before the adapter.
 * @typedef {{executeTool?(name: string, input: ToolInput, options?: {signal?: AbortSignal}): Promise<string | null>}}
 *   ModelContextTesting
 */

/** What the adapter looks for in the page (TypeScript's DOM types do not have WebMCP yet). */
const page = /** @type {{document?: {modelContext?: types.ModelContextLike}, navigator?: {modelContextTesting?: ModelContextTesting}}} */ (
  /** @type {unknown} */ (globalThis));

/** @param {unknown} schema  an object, or its JSON text */
function parseSchema(schema) {
  if (typeof schema === "string") {
    try {
      return JSON.parse(schema);
    } catch {
      return undefined;
    }
  }
  return schema;
}

/**
 * @param {types.RegisteredWebMCPTool} tool
 * @returns {ToolDefinition}
 */
function webmcpDefinition(tool) {
  const inputSchema = parseSchema(tool.inputSchema);
  /** @type {ToolDefinition} */
  const definition = {
    name: tool.name,
    description: tool.description ?? "",
    inputSchema: inputSchema && typeof inputSchema === "object" && !Array.isArray(inputSchema)
      ? { type: "object", ...inputSchema } // the bridge wants "type": "object" at the root
      : { type: "object", properties: {} },
  };
  if (tool.title) definition.title = tool.title;
  if (tool.outputSchema && typeof tool.outputSchema === "object") {
    definition.outputSchema = /** @type {ObjectSchema} */ (tool.outputSchema); // the bridge checks it
  }
  if (tool.annotations && typeof tool.annotations === "object") definition.annotations = { ...tool.annotations };
  return definition;
}

/**
 * A result a runtime's `executeTool()` gave as JSON text.
 * @param {unknown} text
 * @returns {ToolResult}
 */
function parseResultJson(text) {
  if (text === null || text === undefined) return null;
  if (typeof text !== "string") return /** @type {ToolResult} */ (text);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * What a runtime says when `executeTool()` was given an input of the shape it does not take: Chrome
 * before 155 and the polyfill parse it as JSON text (an object reads "[object Object]"), before the
 * tool runs; Chrome 155 on takes an object (WebIDL refuses a string with a TypeError).
 * @param {unknown} error
 */
function refusedInputShape(error) {
  const { name = "", message = "" } = /** @type {{name?: unknown, message?: unknown}} */ (error ?? {});
  return /failed to parse input arguments/i.test(String(message)) || name === "SyntaxError";
}

/**
 * Runs a tool through a runtime's `executeTool`-like function, with the input as an object (the
 * draft, Chrome 155 on) or as JSON text (Chrome 152–154, the polyfill): the object first, the text
 * when the runtime could not parse it; the shape that worked is kept for the next calls.
 * @returns {(execute: (input: ToolInput) => Promise<unknown>, params: Record<string, unknown>) => Promise<unknown>}
 */
function inputShapeProbe() {
  /** @type {"object" | "json" | null} */
  let shape = null;
  return async (execute, params) => {
    if (shape !== "json") {
      try {
        const result = await execute(params);
        shape = "object";
        return result;
      } catch (error) {
        if (shape === "object" || !refusedInputShape(error)) throw error;
      }
    }
    const result = await execute(JSON.stringify(params));
    shape = "json";
    return result;
  };
}

/**
 * Serve the tools a page registers with WebMCP (`document.modelContext`) through the bridge, without
 * changing the page's code.
 *
 * - Tools registered from now on through `modelContext.registerTool(tool, {signal})` are mirrored,
 *   and unmirrored when `signal` aborts or `modelContext.unregisterTool(name)` is called (older API).
 *   Calls run `tool.execute(input, client)`, where `client` is {signal, callId, progress}: `signal`
 *   aborts when the agent cancels.
 * - Tools already registered (and any registered behind our back, seen through `toolchange`) are
 *   mirrored from `getTools()` and run through `modelContext.executeTool()` or
 *   `navigator.modelContextTesting.executeTool()`, when the runtime offers one (with the call's
 *   signal, which Chrome hands on to `execute`).
 * - A runtime's tool for a `<form toolname>` (declarative WebMCP, native or polyfilled) is left to
 *   serveForms() when it serves the page's forms on this bridge, so no form is served twice.
 *
 * Returns {ready, tools, dispose()}: `ready` resolves once the existing tools are mirrored; `dispose()`
 * restores `registerTool` and unregisters the mirrored tools.
 * @type {typeof types.bridgeWebMCP}
 */
export function bridgeWebMCP(bridge, { modelContext = page.document?.modelContext, signal } = {}) {
  if (!modelContext || typeof modelContext.registerTool !== "function") {
    throw new TypeError("No WebMCP document.modelContext here: load a WebMCP runtime (e.g. @mcp-b/global) first.");
  }
  const mc = modelContext;
  // The input shape each of the runtime's ways to run a tool takes, learnt at its first call.
  const runExecuteTool = inputShapeProbe();
  const runTestingTool = inputShapeProbe();
  /** @type {Map<string, {controller: AbortController, direct: boolean}>} direct: runs the tool's execute() */
  const mirrored = new Map();
  /** @type {Set<string>} names being registered through the wrapper */
  const pending = new Set();
  const originalRegister = mc.registerTool;
  const originalUnregister = typeof mc.unregisterTool === "function" ? mc.unregisterTool : null;
  let disposed = false;

  /** @param {string} name */
  const unmirror = (name) => {
    const entry = mirrored.get(name);
    if (!entry) return;
    mirrored.delete(name);
    entry.controller.abort("unregistered from WebMCP");
  };

  /**
   * @param {types.RegisteredWebMCPTool} tool
   * @param {ToolHandler<any>} run
   * @param {boolean} direct
   * @param {AbortSignal} [registrationSignal]
   */
  const mirror = (tool, run, direct, registrationSignal) => {
    if (disposed || !tool || typeof tool.name !== "string") return;
    if (registrationSignal?.aborted || servesFormTool(bridge, tool.name)) return;
    const previous = mirrored.get(tool.name);
    if (previous && previous.direct && !direct) return; // keep the direct path to execute()
    const controller = new AbortController();
    mirrored.set(tool.name, { controller, direct });
    previous?.controller.abort("replaced");
    registrationSignal?.addEventListener("abort", () => {
      if (mirrored.get(tool.name)?.controller === controller) unmirror(tool.name);
    }, { once: true });
    bridge.registerTool(webmcpDefinition(tool), run, { signal: controller.signal }).catch((error) => {
      if (error?.name !== "AbortError" && mirrored.get(tool.name)?.controller === controller) {
        mirrored.delete(tool.name);
      }
    });
  };

  /**
   * @param {types.WebMCPTool} tool
   * @returns {ToolHandler<any>}
   */
  const directRunner = (tool) => async (params, ctx) => {
    /** @type {types.WebMCPClient} */
    const client = { signal: ctx.signal, callId: ctx.callId, progress: ctx.progress };
    const result = await tool.execute(params, client);
    return /** @type {ToolResult} */ (result === undefined ? null : result);
  };

  /**
   * @param {types.RegisteredWebMCPTool} registered
   * @returns {ToolHandler<any>}
   */
  const executeRunner = (registered) => async (params, ctx) => {
    const options = { signal: ctx.signal };
    if (typeof mc.executeTool === "function") {
      const execute = /** @type {NonNullable<types.ModelContextLike["executeTool"]>} */ (mc.executeTool);
      return parseResultJson(await runExecuteTool((input) => Reflect.apply(execute, mc, [registered, input, options]),
        params ?? {}));
    }
    const testing = page.navigator?.modelContextTesting;
    if (testing && typeof testing.executeTool === "function") {
      const execute = testing.executeTool;
      return parseResultJson(await runTestingTool((input) => Reflect.apply(execute, testing, [registered.name, input,
        options]), params ?? {}));
    }
    throw new Error(`The WebMCP runtime offers no way to run ${registered.name}, registered before bridging.`);
  };

  const canExecute = () => typeof mc.executeTool === "function" ||
    typeof page.navigator?.modelContextTesting?.executeTool === "function";

  /** @returns {Promise<types.RegisteredWebMCPTool[]>} */
  async function listRegistered() {
    if (typeof mc.getTools === "function") return (await mc.getTools()) ?? [];
    if (typeof mc.listTools === "function") return (await mc.listTools()) ?? [];
    return [];
  }

  let syncs = 0;
  async function sync() {
    if (disposed) return;
    const mine = ++syncs;
    let registered;
    try {
      registered = await listRegistered();
    } catch (error) {
      bridge.dispatchEvent(new CustomEvent("error", {
        detail: { code: "webmcp", message: `getTools() failed: ${errorMessage(error)}` },
      }));
      return;
    }
    if (mine !== syncs || disposed) return; // a newer sync has a fresher list
    const names = new Set(registered.map((t) => t.name));
    for (const tool of registered) {
      if (mirrored.has(tool.name) || pending.has(tool.name) || !canExecute()) continue;
      mirror(tool, executeRunner(tool), false);
    }
    // Tools we mirrored from getTools() leave with it; tools registered through our wrapper leave
    // when their registration signal aborts (the WebMCP way) or through unregisterTool().
    for (const [name, entry] of [...mirrored]) {
      if (!entry.direct && !names.has(name) && !pending.has(name)) unmirror(name);
    }
  }

  /**
   * `modelContext.registerTool`, wrapped: the runtime registers the tool, then the bridge mirrors it.
   * @this {unknown}
   * @param {types.WebMCPTool} tool
   * @param {{signal?: AbortSignal}} [options]
   * @param {...unknown} rest  whatever a runtime's registerTool also takes
   */
  function registerTool(tool, options, ...rest) {
    const name = tool?.name;
    if (typeof name === "string") pending.add(name);
    /** @type {any} a promise (W3C), {unregister()} (older MCP-B) or nothing */
    let returned;
    try {
      returned = Reflect.apply(originalRegister, this ?? mc, [tool, options, ...rest]);
    } catch (error) {
      pending.delete(name);
      throw error;
    }
    const after = () => {
      pending.delete(name);
      if (typeof tool?.execute === "function") mirror(tool, directRunner(tool), true, options?.signal);
    };
    if (returned && typeof returned.then === "function") {
      return returned.then((/** @type {unknown} */ value) => {
        after();
        return value;
      }, (/** @type {unknown} */ error) => {
        pending.delete(name);
        throw error;
      });
    }
    after();
    if (returned && typeof returned.unregister === "function") {
      // The older MCP-B API returned {unregister()}.
      const unregister = returned.unregister.bind(returned);
      returned.unregister = (/** @type {unknown[]} */ ...args) => {
        unmirror(name);
        return unregister(...args);
      };
    }
    return returned;
  }

  /**
   * `modelContext.unregisterTool` (older API), wrapped.
   * @this {unknown}
   * @param {string} name
   * @param {...unknown} rest
   */
  function unregisterTool(name, ...rest) {
    unmirror(name);
    return Reflect.apply(/** @type {Function} */ (originalUnregister), this ?? mc, [name, ...rest]);
  }

  mc.registerTool = registerTool;
  if (originalUnregister) mc.unregisterTool = unregisterTool;
  const onToolChange = () => {
    sync();
  };
  if (typeof mc.addEventListener === "function") mc.addEventListener("toolchange", onToolChange);

  const handle = {
    ready: sync(),
    get tools() {
      return [...mirrored.keys()];
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      if (mc.registerTool === registerTool) mc.registerTool = originalRegister;
      if (originalUnregister && mc.unregisterTool === unregisterTool) mc.unregisterTool = originalUnregister;
      if (typeof mc.removeEventListener === "function") mc.removeEventListener("toolchange", onToolChange);
      for (const name of [...mirrored.keys()]) unmirror(name);
    },
  };
  if (signal?.aborted) handle.dispose();
  else signal?.addEventListener("abort", () => handle.dispose(), { once: true });
  return handle;
}
