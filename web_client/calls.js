/**
 * calls.js — the calls agents make to a page: running each invocation once, its answer and
 * progress, cancels, and the outbox of answers that could not be sent (or may have been lost with
 * a socket) until the page is connected again. Types: calls.d.ts.
 */
/** @import * as types from "./calls.js" */
/** @import { ActiveCall, ToolCallContext, ToolResult } from "./connection.js" */
import { abortError, errorMessage } from "./errors.js";

const SENT_ANSWERS_KEPT = 200; // answers kept to send again if the bridge says it never got them
const FINISHED_CALLS_KEPT = 5000; // call ids remembered after they end, to ignore replays
const ASKS_KEPT = 1000; // input requests remembered until the agent's answers come back

/**
 * Forget the oldest entries (the first inserted) beyond the newest `max`.
 * @param {Map<unknown, unknown> | Set<unknown>} kept
 * @param {number} max
 */
function keepNewest(kept, max) {
  for (const oldest of kept.keys()) {
    if (kept.size <= max) break;
    kept.delete(oldest);
  }
}

/**
 * The id an `askAgent` request state carries, as the bridge hands it back.
 * @param {unknown} text
 * @returns {string | undefined}
 */
function askId(text) {
  if (typeof text !== "string") return undefined;
  try {
    const id = JSON.parse(text)?.ask;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

/** An unguessable id for one input request (crypto.randomUUID needs a secure context; this does not). */
function newAskId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** @implements {types.Calls} */
export class Calls {
  /** @param {types.CallsLink} link */
  constructor(link) {
    this._link = link;
    /** @type {Map<string, types.Call>} call_id -> active call */
    this._running = new Map();
    /** @type {Set<string>} call ids that ended (answered or cancelled) */
    this._finished = new Set();
    /** @type {Map<string, types.BridgeMessage>} call_id -> answer waiting for a socket */
    this._outbox = new Map();
    /** @type {Map<string, types.BridgeMessage>} call_id -> the last answers sent, oldest first, in case one was lost */
    this._sent = new Map();
    /** @type {Map<string, types.BridgeMessage>} call_id -> invocation held until its tool is registered */
    this.parked = new Map();
    /** @type {Map<string, types.Ask>} the input requests this page made whose answers have not come back, by id */
    this._asks = new Map();
  }

  /** @returns {ActiveCall[]} */
  get active() {
    return [...this._running.values()].map((c) => ({ callId: c.callId, tool: c.tool, params: c.params,
      startedAt: c.startedAt }));
  }

  /** @param {types.BridgeMessage} message  an `agui.tool.invoke` */
  invoke(message) {
    const callId = message.call_id;
    if (this._running.has(callId) || this._finished.has(callId) || this.parked.has(callId)) return; // a replay: answer each call once
    const handler = this._link.handler(message.tool);
    if (!handler && this._link.holding()) {
      this.parked.set(callId, message); // a reloaded page may not have registered it yet
      return;
    }
    /** @type {types.Call} */
    const call = {
      callId,
      tool: message.tool,
      name: message.name,
      params: message.params ?? {},
      controller: new AbortController(),
      startedAt: Date.now(),
      done: false,
    };
    this._running.set(callId, call);
    this._link.emit("invoke", { callId, tool: call.tool, name: call.name, params: call.params,
      mcpRequestId: message.mcp_request_id });
    const answered = this._answersTo(message);
    if (!handler) {
      this._answer(call, { error: { message: `This page has no tool named ${JSON.stringify(message.tool)} (any more).` } });
      return;
    }
    /** @type {ToolCallContext} */
    const context = {
      signal: call.controller.signal,
      callId,
      tool: call.tool,
      name: call.name,
      progress: (progress, total, text) => this._progress(call, progress, total, text),
      log: (level, data, logger) => this._log(call, level, data, logger),
      askAgent: (requests, state) => this._askAgent(call, answered.responses, requests, state),
      clientCapabilities: message.client_capabilities ?? {},
      inputResponses: answered.responses,
      requestState: answered.state,
    };
    /** @type {Promise<ToolResult>} */
    let running;
    try {
      running = Promise.resolve(handler(call.params, context));
    } catch (thrown) {
      running = Promise.reject(thrown);
    }
    running.then(
      (result) => this._answer(call, { result }),
      (thrown) => this._answer(call, { error: { message: errorMessage(thrown) } }),
    );
  }

  /** @param {string} tool  run the invocations held for it */
  release(tool) {
    for (const [callId, invocation] of this.parked) {
      if (invocation.tool !== tool) continue;
      this.parked.delete(callId);
      this.invoke(invocation);
    }
  }

  /**
   * Stop holding invocations.
   * @param {boolean} run  run the ones held (each is answered with an error: no handler), or drop them
   */
  unpark(run) {
    const parked = [...this.parked.values()];
    this.parked.clear();
    if (run) for (const invocation of parked) this.invoke(invocation);
  }

  /** @param {types.BridgeMessage} message  an `agui.tool.cancel` */
  cancelled(message) {
    const call = this._running.get(message.call_id);
    this._outbox.delete(message.call_id);
    this._sent.delete(message.call_id);
    this.parked.delete(message.call_id);
    if (!call) {
      this._finish(message.call_id); // a late replay of its invocation must not start it
      return;
    }
    const reason = message.reason || "cancelled by the agent";
    call.done = true;
    this._finish(call.callId);
    call.controller.abort(abortError(`Cancelled: ${reason}`));
    this._link.emit("cancel", { callId: call.callId, tool: call.tool, reason });
  }

  /** @param {string} reason */
  abortAll(reason) {
    for (const call of [...this._running.values()]) {
      call.done = true;
      this._finish(call.callId);
      call.controller.abort(abortError(reason));
      this._link.emit("cancel", { callId: call.callId, tool: call.tool, reason });
    }
  }

  /** The session is gone: the bridge will take no answer of it. */
  forgetAnswers() {
    this._outbox.clear();
    this._sent.clear();
  }

  /**
   * Connected again: send the answers held while away, and again those the bridge says it still
   * waits for (they died with the old connection).
   * @param {string[]} waiting
   */
  deliver(waiting) {
    for (const callId of waiting) {
      const answer = this._sent.get(callId);
      if (answer && !this._outbox.has(callId)) this._outbox.set(callId, answer);
    }
    for (const [callId, answer] of this._outbox) {
      if (this._link.send(answer)) this._outbox.delete(callId);
    }
  }

  /**
   * @param {types.Call} call
   * @param {{result?: unknown, error?: {message: string}}} outcome
   */
  _answer(call, outcome) {
    if (call.done) return; // cancelled, or answered already: never answer twice
    call.done = true;
    this._finish(call.callId);
    /** @type {{type: string, call_id: string, result?: unknown, error?: {message: string}}} */
    const answer = { type: "agui.tool.return", call_id: call.callId };
    if (outcome.error) {
      answer.error = outcome.error;
    } else {
      answer.result = outcome.result === undefined ? null : outcome.result;
      try {
        JSON.stringify(answer);
      } catch (error) {
        delete answer.result;
        answer.error = { message: `The tool's result could not be sent as JSON: ${errorMessage(error)}` };
      }
    }
    if (!this._link.send(answer)) this._outbox.set(call.callId, answer); // delivered after we reconnect
    this._sent.set(call.callId, answer);
    keepNewest(this._sent, SENT_ANSWERS_KEPT);
    this._link.emit("result", { callId: call.callId, tool: call.tool, result: /** @type {ToolResult} */ (answer.result),
      error: answer.error?.message, ms: Date.now() - call.startedAt });
  }

  /**
   * @param {types.Call} call
   * @param {number} progress
   * @param {number | null} [total]
   * @param {string | null} [text]
   */
  _progress(call, progress, total, text) {
    if (call.done) return false;
    const value = Number(progress);
    if (!Number.isFinite(value)) throw new TypeError("progress() needs a finite number.");
    /** @type {{type: string, call_id: string, progress: number, total?: number, message?: string}} */
    const message = { type: "agui.tool.progress", call_id: call.callId, progress: value };
    if (total !== undefined && total !== null && Number.isFinite(Number(total))) message.total = Number(total);
    if (text !== undefined && text !== null) message.message = String(text);
    this._link.emit("progress", { callId: call.callId, progress: value, total: message.total, message: message.message });
    return this._link.send(message); // progress is advisory: dropped while disconnected
  }

  /**
   * @param {types.Call} call
   * @param {string} level
   * @param {unknown} data
   * @param {string} [logger]
   */
  _log(call, level, data, logger) {
    if (call.done) return false;
    /** @type {Record<string, unknown>} */
    const message = { type: "agui.tool.log", call_id: call.callId, level, data: data === undefined ? null : data };
    if (logger !== undefined) message.logger = logger;
    return this._link.send(message); // advisory, as progress
  }

  /**
   * What an invocation answers of this page's own input requests: the answers to the keys one of them
   * asked, and the state it was given, when the invocation comes back with that request's state
   * (each request is answered once). Anything else is nobody's answer: none, and no state.
   * @param {types.BridgeMessage} message
   * @returns {{responses: Record<string, any>, state: any}}
   */
  _answersTo(message) {
    const id = askId(message.request_state);
    const ask = id === undefined ? undefined : this._asks.get(id);
    if (!ask || ask.tool !== message.tool) return { responses: {}, state: undefined };
    this._asks.delete(/** @type {string} */ (id));
    const given = message.input_responses ?? {};
    /** @type {Record<string, any>} */
    const responses = {};
    for (const key of ask.keys) if (Object.hasOwn(given, key)) responses[key] = given[key];
    return { responses, state: ask.state === undefined ? undefined : JSON.parse(ask.state) };
  }

  /**
   * The agent's answers to `requests`, when this invocation carries them all; otherwise ask for them:
   * this run of the handler ends (its signal aborts, the promise never settles) and the bridge
   * invokes the tool again with the answers in `inputResponses` and `state` in `requestState`.
   * @param {types.Call} call
   * @param {Record<string, unknown>} responses
   * @param {Record<string, {method: string, params?: Record<string, unknown>}>} requests
   * @param {unknown} [state]
   * @returns {Promise<Record<string, any>>}
   */
  _askAgent(call, responses, requests, state) {
    const keys = Object.keys(requests);
    if (keys.length && keys.every((key) => Object.hasOwn(responses, key))) {
      return Promise.resolve(Object.fromEntries(keys.map((key) => [key, responses[key]])));
    }
    if (call.done) return Promise.reject(abortError("The call has ended."));
    // The state stays here; the bridge carries only the request's id, which the answers must come back with.
    const id = newAskId();
    const message = { type: "agui.tool.input_request", call_id: call.callId, requests,
      requestState: JSON.stringify({ ask: id }) };
    this._asks.set(id, { tool: call.tool, keys, state: state === undefined ? undefined : JSON.stringify(state) });
    keepNewest(this._asks, ASKS_KEPT);
    call.done = true;
    this._finish(call.callId);
    if (!this._link.send(message)) this._outbox.set(call.callId, message);
    this._sent.set(call.callId, message);
    call.controller.abort(abortError("Waiting for the agent's input; the tool is invoked again with it."));
    return new Promise(() => {});
  }

  /** @param {string} callId */
  _finish(callId) {
    this._running.delete(callId);
    this._finished.add(callId);
    keepNewest(this._finished, FINISHED_CALLS_KEPT);
  }
}
