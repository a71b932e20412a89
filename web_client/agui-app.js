/**
 * agui-app.js — serve an AG-UI app's frontend tools to MCP agents through agui-mcp-bridge.
 * No build step, no dependencies: pass it any `@ag-ui/client` agent whose runs go to the bridge.
 *
 *   import { HttpAgent } from "@ag-ui/client";
 *   import { serveFrontendTools, DECLINE } from "http://127.0.0.1:8765/client/agui-app.js";
 *
 *   const agent = new HttpAgent({ url: "http://127.0.0.1:8765/agui/run" });
 *   const stop = new AbortController();
 *   serveFrontendTools(agent, [
 *     { name: "read_cart", description: "The items in the cart.",
 *       parameters: { type: "object", properties: {} },
 *       handler: async (args, { signal }) => JSON.stringify(cart.items) },
 *     { name: "confirm_order", description: "Ask the user to confirm the order.", interrupt: true,
 *       handler: async (args, { interrupt }) => (await askTheUser(interrupt)) ? { approved: true } : DECLINE },
 *   ], { signal: stop.signal, title: "Shop" });
 *
 * It keeps one run of the agent's thread open against the bridge. A run ends when agents have called
 * tools (TOOL_CALL_START / ARGS / END; an interrupt for a tool marked `interrupt`): each call goes to its
 * handler, and the next run, started at once, carries the results (ToolMessages, or `resume` entries
 * for interrupts). When a handler finishes while a run waits, that run is aborted and a new one takes
 * the result, so answers never wait for the next call. CUSTOM `agui.tool.cancel` aborts a handler's
 * signal. The agent's messages are this loop's own: use an agent for the bridge alone.
 * Types: agui-app.d.ts. The contract: docs/agui.md.
 */
/** @import * as types from "./agui-app.js" */
import { AguiBridgeError, abortError, errorMessage } from "./errors.js";

/** The bridge's key in a tool's `metadata` and in `forwardedProps`. */
export const BRIDGE_KEY = "agui-mcp-bridge";

/** @type {typeof types.DECLINE} */
export const DECLINE = Symbol.for("agui-mcp-bridge.decline");

const CONTENT = Symbol("agui-mcp-bridge.content");
/** Run errors that retrying cannot mend: the app's tools are invalid, or another client serves the thread. */
const FATAL_RUN_ERRORS = new Set(["invalid_tool", "superseded"]);
const REMEMBERED_CALLS = 10_000;
const MAX_RETRY_DELAY = 5000;

/** @type {typeof types.toolContent} */
export function toolContent(parts) {
  return { [CONTENT]: parts };
}

/**
 * The AG-UI tool the bridge registers for a frontend tool.
 * @param {types.FrontendTool} tool
 */
function agUiTool(tool) {
  if (!tool || typeof tool.name !== "string" || !tool.name) throw new TypeError("Each tool needs a name.");
  if (typeof tool.handler !== "function") throw new TypeError(`Tool ${tool.name} needs a handler function.`);
  /** @type {Record<string, unknown>} */
  const options = {};
  if (tool.interrupt) options.interrupt = tool.interrupt;
  if (tool.title) options.title = tool.title;
  if (tool.annotations) options.annotations = tool.annotations;
  return {
    name: tool.name,
    description: tool.description ?? "",
    parameters: tool.parameters ?? { type: "object", properties: {} },
    ...(Object.keys(options).length ? { metadata: { [BRIDGE_KEY]: options } } : {}),
  };
}

/**
 * What a handler returned, as a ToolMessage's content.
 * @param {unknown} value
 * @returns {string | unknown[]}
 */
function messageContent(value) {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && CONTENT in value) return /** @type {unknown[]} */ (value[CONTENT]);
  if (value === undefined) return "";
  return JSON.stringify(value) ?? String(value);
}

/** @param {number} ms @param {AbortSignal | undefined} signal */
function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve(undefined);
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * A failed run's HTTP error (`HTTP 422: {...}` from @ag-ui/client) as an AguiBridgeError when retrying
 * cannot help (the bridge refused the request), else null.
 * @param {unknown} failure
 */
function refusal(failure) {
  const status = failure && typeof failure === "object" && "status" in failure ? Number(failure.status) : 0;
  if (status < 400 || status >= 500 || status === 408 || status === 429) return null;
  const payload = /** @type {{payload?: {code?: string, message?: string}}} */ (failure).payload;
  return new AguiBridgeError(payload?.message ?? errorMessage(failure),
                             { code: payload?.code ?? `http_${status}`, detail: payload ?? null });
}

/** @type {typeof types.serveFrontendTools} */
export async function serveFrontendTools(agent, tools, options = {}) {
  const { signal, title, onRegistered, onError, retryDelay = 250 } = options;
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const definitions = tools.map(agUiTool);
  const forwardedProps = title ? { [BRIDGE_KEY]: { title } } : {};
  /** @type {Map<string, AbortController>} handlers at work, by toolCallId */
  const working = new Map();
  /** @type {Set<string>} calls started (or cancelled before): a call is never run twice */
  const known = new Set();
  /** @type {Map<string, types.InterruptLike>} open interrupts, by toolCallId */
  const interrupts = new Map();
  // What the next run tells the bridge: the calls this app has taken on, and their answers.
  /** @type {Array<{id: string, type: "function", function: {name: string, arguments: string}}>} */
  let taken = [];
  /** @type {Array<Record<string, unknown>>} */
  let answers = [];
  /** @type {Array<{interruptId: string, status: "resolved" | "cancelled", payload?: unknown}>} */
  let resumes = [];
  let running = false;
  let woken = false;

  /** A result is ready: end the waiting run so the next one carries it. */
  function wake() {
    if (!running || woken) return;
    woken = true;
    agent.abortRun();
    void agent.detachActiveRun?.();
  }

  /** @param {string} id */
  function remember(id) {
    known.add(id);
    if (known.size > REMEMBERED_CALLS) known.delete(known.values().next().value ?? "");
  }

  /** @param {{id: string, name: string, args: unknown}} call */
  function start(call) {
    if (known.has(call.id)) return; // handed over again after a cut run, or cancelled already
    remember(call.id);
    taken.push({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } });
    const controller = new AbortController();
    working.set(call.id, controller);
    const tool = byName.get(call.name);
    (async () => {
      if (!tool) throw new Error(`This app has no tool named ${call.name}.`);
      return tool.handler(call.args, { signal: controller.signal, toolCallId: call.id,
                                       interrupt: interrupts.get(call.id) });
    })().then(
      (value) => settle(call.id, controller, value, undefined),
      (thrown) => settle(call.id, controller, undefined, thrown),
    );
  }

  /**
   * @param {string} id @param {AbortController} controller @param {unknown} value @param {unknown} thrown
   */
  function settle(id, controller, value, thrown) {
    working.delete(id);
    if (controller.signal.aborted) return; // cancelled: the bridge would not take the answer
    const interrupt = interrupts.get(id);
    interrupts.delete(id);
    if (interrupt && thrown === undefined) {
      resumes.push(value === DECLINE ? { interruptId: interrupt.id, status: "cancelled" }
        : { interruptId: interrupt.id, status: "resolved", payload: value === undefined ? null : value });
    } else {
      const error = thrown !== undefined ? errorMessage(thrown) : value === DECLINE ? "The user declined." : null;
      answers.push({ id: crypto.randomUUID(), role: "tool", toolCallId: id,
                     content: error === null ? messageContent(value) : "", ...(error === null ? {} : { error }) });
    }
    wake();
  }

  /** @param {{name: string, value: any}} event */
  function custom(event) {
    if (event.name === "agui.tool.cancel") {
      const id = event.value?.toolCallId;
      remember(id);
      interrupts.delete(id);
      working.get(id)?.abort(abortError(`The call was cancelled: ${event.value?.reason}.`));
    } else if (event.name === "agui.tools.registered") {
      onRegistered?.(event.value?.tools ?? []);
    }
  }

  let delay = retryDelay;
  try {
    while (!signal?.aborted) {
      const sent = { taken, answers, resumes };
      /** @type {Array<Record<string, unknown>>} */
      const messages = taken.length ? [{ id: crypto.randomUUID(), role: "assistant", toolCalls: taken }] : [];
      agent.setMessages(/** @type {any} */ ([...messages, ...answers]));
      // This loop answers interrupts itself, in whichever run their answer is ready: the bridge keeps
      // announcing an open interrupt at the end of every run until it is answered.
      agent.pendingInterrupts = [];
      /** @type {Array<{id: string, name: string, args: unknown}>} */
      const received = [];
      /** @type {types.InterruptLike[]} */
      let asked = [];
      /** @type {{code?: string, message: string} | null} */
      let runError = null;
      /** @type {unknown} */
      let failure = null;
      const stop = () => wake();
      signal?.addEventListener("abort", stop);
      running = true;
      woken = false;
      try {
        await agent.runAgent({ tools: definitions, forwardedProps, ...(resumes.length ? { resume: resumes } : {}) }, {
          onRunStartedEvent() {
            // The bridge took this run's input before RUN_STARTED: none of it is sent again.
            taken = taken.filter((call) => !sent.taken.includes(call));
            answers = answers.filter((answer) => !sent.answers.includes(answer));
            resumes = resumes.filter((entry) => !sent.resumes.includes(entry));
          },
          onToolCallEndEvent({ event, toolCallName, toolCallArgs }) {
            received.push({ id: event.toolCallId, name: toolCallName, args: toolCallArgs });
          },
          onCustomEvent({ event }) {
            custom(event);
          },
          onRunFinishedEvent(params) {
            if (params.outcome === "interrupt") asked = params.interrupts;
          },
          onRunErrorEvent({ event }) {
            runError = event;
          },
          onRunFailed({ error }) {
            failure = error;
          },
        });
      } catch (error) {
        failure = error;
      } finally {
        running = false;
        signal?.removeEventListener("abort", stop);
      }
      for (const interrupt of asked) {
        const id = interrupt.toolCallId;
        // New calls, and calls at work (an open interrupt is announced again by every run); not finished ones.
        if (id && (!known.has(id) || working.has(id))) interrupts.set(id, interrupt);
      }
      for (const call of received) start(call);
      if (signal?.aborted) break;
      const problem = /** @type {{code?: string, message: string} | null} */ (runError);
      if (problem && FATAL_RUN_ERRORS.has(problem.code ?? "")) {
        throw new AguiBridgeError(problem.message, { code: problem.code, detail: problem });
      }
      if (failure !== null && !woken) {
        const refused = refusal(failure);
        if (refused) throw refused;
      }
      if (problem || (failure !== null && !woken)) {
        onError?.(problem ? new AguiBridgeError(problem.message, { code: problem.code, detail: problem }) : failure);
        await pause(delay, signal);
        delay = Math.min(delay * 2, MAX_RETRY_DELAY);
        continue;
      }
      delay = retryDelay;
    }
  } finally {
    for (const controller of working.values()) controller.abort(abortError("The app stopped serving its tools."));
  }
}
