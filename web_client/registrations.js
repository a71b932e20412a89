/**
 * registrations.js — the tools a page registered: what the bridge has been sent of them, the
 * register and unregister messages (batched: a page adding 300 tools sends a few frames, not 300),
 * and the bridge's replies. Types: registrations.d.ts.
 */
/** @import * as types from "./registrations.js" */
/** @import { RegisteredTool, ToolDefinition, ToolHandler } from "./connection.js" */
import { AguiBridgeError, abortError } from "./errors.js";

const REGISTER_BATCH_CHARS = 256 * 1024; // split big registrations well below the bridge's 1 MiB limit

/**
 * The wire form of a definition; throws TypeError for one the bridge would refuse anyway.
 * @param {ToolDefinition} definition
 * @returns {types.WireToolDefinition}
 */
function checkDefinition(definition) {
  if (!definition || typeof definition !== "object") throw new TypeError("A tool definition must be an object.");
  const { name } = definition;
  if (typeof name !== "string" || name.length < 1 || name.length > 128) {
    throw new TypeError("A tool needs a name of 1 to 128 characters.");
  }
  /** @type {types.WireToolDefinition} */
  const wire = {
    name,
    description: definition.description ?? "",
    inputSchema: definition.inputSchema ?? { type: "object", properties: {} },
  };
  if (definition.outputSchema != null) wire.outputSchema = definition.outputSchema;
  if (definition.title != null) wire.title = definition.title;
  if (definition.annotations != null) wire.annotations = definition.annotations;
  if (definition.pinned) wire.pinned = true;
  if (definition.inputExamples != null) wire.inputExamples = definition.inputExamples;
  if (definition.execution != null) wire.execution = definition.execution;
  if (definition.inputBeforeTask) wire.inputBeforeTask = true;
  JSON.stringify(wire); // throws on cycles/BigInt now rather than when sending
  return wire;
}

/** @implements {types.Registrations} */
export class Registrations {
  /** @param {types.RegistrationsLink} link */
  constructor(link) {
    this._link = link;
    /** @type {Map<string, types.Registration>} page name -> registration */
    this._tools = new Map();
    /** @type {Map<string, types.Registration>} sent at the next flush */
    this._registerQueue = new Map();
    /** @type {Set<string>} page names to unregister at the next flush */
    this._unregisterQueue = new Set();
    this._flushScheduled = false;
    /** @type {Map<number, types.PendingRequest>} message id -> request */
    this._requests = new Map();
  }

  /** @param {string} name */
  get(name) {
    return this._tools.get(name);
  }

  get names() {
    return [...this._tools.keys()];
  }

  /** @returns {RegisteredTool[]} */
  list() {
    return [...this._tools.values()].map((r) => ({ name: r.name, mcpName: r.mcpName, definition: r.definition }));
  }

  /**
   * @param {ToolDefinition} definition
   * @param {ToolHandler<any>} handler
   * @param {AbortSignal} [signal]
   * @returns {Promise<string>}
   */
  add(definition, handler, signal) {
    if (typeof handler !== "function") return Promise.reject(new TypeError("registerTool needs a handler function."));
    let wire;
    try {
      wire = checkDefinition(definition);
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(abortError(signal.reason));
    /** @type {(name: string) => void} */
    let resolve = () => {};
    /** @type {(error: unknown) => void} */
    let reject = () => {};
    /** @type {Promise<string>} */
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {}); // a caller that ignores the promise gets no unhandled rejection
    /** @type {types.Registration} */
    const registration = { name: wire.name, definition: wire, handler, mcpName: null, sent: false, replaces: false,
      promise, resolve, reject, detach: null };
    const previous = this._tools.get(wire.name);
    if (previous) {
      previous.detach?.();
      registration.mcpName = previous.mcpName;
      registration.sent = previous.sent;
      registration.replaces = previous.mcpName !== null; // the bridge has the previous definition
      // A caller still waiting on the previous registration learns the name from this one.
      promise.then(previous.resolve, previous.reject);
    }
    this._tools.set(wire.name, registration);
    this._unregisterQueue.delete(wire.name);
    this._registerQueue.set(wire.name, registration);
    if (signal) {
      const onAbort = () => this._remove(registration, signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      registration.detach = () => signal.removeEventListener("abort", onAbort);
    }
    this._scheduleFlush();
    this._link.added(wire.name);
    return promise;
  }

  /**
   * @param {string} name
   * @param {unknown} reason
   */
  remove(name, reason) {
    const registration = this._tools.get(name);
    if (registration) this._remove(registration, reason);
  }

  /** @param {Iterable<string>} names  tools the bridge has that no handler of this page serves */
  unregister(names) {
    for (const name of names) this._unregisterQueue.add(name);
    this._scheduleFlush();
  }

  /**
   * The page is welcomed: send every registration again (idempotent on a resumed session). Tools
   * dropped while away are unregistered on a resumed session; a new session never had them.
   * @param {boolean} resumed
   */
  welcomed(resumed) {
    this._requests.clear(); // replies to requests on an older socket will not come
    for (const registration of this._tools.values()) this._registerQueue.set(registration.name, registration);
    if (!resumed) this._unregisterQueue.clear();
    this.flush();
  }

  /** @param {unknown} error  what every registration still waiting rejects with */
  close(error) {
    for (const registration of this._tools.values()) {
      registration.detach?.();
      registration.reject(error);
    }
    this._tools.clear();
    this._registerQueue.clear();
    this._unregisterQueue.clear();
  }

  // --- the bridge's replies ---------------------------------------------------------------------

  /**
   * @param {types.BridgeMessage} message  an `agui.tools.registered`
   * @returns {Array<{tool: string, name: string}>} the pairs it named
   */
  registered(message) {
    const request = this._requests.get(message.reply_to);
    /** @type {Array<{tool: string, name: string}>} */
    const pairs = Array.isArray(message.tools) ? message.tools : [];
    for (const { tool, name } of pairs) {
      const registration = (request?.kind === "register" ? request.registrations.find((r) => r.name === tool) : null) ??
        this._tools.get(tool);
      if (!registration) continue;
      registration.mcpName = name;
      registration.resolve(name);
    }
    if (request?.kind === "register") {
      const answered = new Set(pairs.map((p) => p.tool));
      request.waiting = request.names.filter((n) => !answered.has(n)); // their invalid_tool errors follow
      if (!request.waiting.length) this._requests.delete(message.reply_to);
    }
    return pairs;
  }

  /** @param {types.BridgeMessage} message  an `agui.tools.unregistered` */
  unregistered(message) {
    this._requests.delete(message.reply_to);
  }

  /**
   * An `agui.error`: settles the request it answers, if any.
   * @param {types.BridgeMessage} message
   * @returns {boolean} true when the page got what it wanted, so the error is not worth telling
   */
  refused(message) {
    const request = this._requests.get(message.reply_to);
    if (message.code === "invalid_tool" && request?.kind === "register") {
      const registration = request.registrations.find((r) => r.name === message.tool);
      if (registration) {
        if (this._tools.get(registration.name) === registration) {
          this._tools.delete(registration.name);
          registration.detach?.();
          if (registration.replaces) {
            // The bridge kept the definition this one was to replace; its handler is gone, so remove it.
            this._unregisterQueue.add(registration.name);
            this._scheduleFlush();
          }
        }
        registration.reject(new AguiBridgeError(message.message, { code: message.code, detail: message }));
      }
      request.waiting = request.waiting.filter((n) => n !== message.tool);
      if (!request.waiting.length) this._requests.delete(message.reply_to);
    }
    if (message.code === "unknown_tool" && request?.kind === "unregister") {
      // We unregistered a tool whose registration had not reached the bridge (e.g. it was just
      // reconnecting), or a tool of the previous page that it already lacked: the outcome is what we wanted.
      this._requests.delete(message.reply_to);
      return true;
    }
    return false;
  }

  // --- sending ----------------------------------------------------------------------------------

  /**
   * @param {types.Registration} registration
   * @param {unknown} reason
   */
  _remove(registration, reason) {
    if (this._tools.get(registration.name) !== registration) return; // replaced since
    registration.detach?.();
    this._tools.delete(registration.name);
    registration.reject(abortError(reason));
    if (this._registerQueue.get(registration.name) === registration) {
      this._registerQueue.delete(registration.name);
      if (!registration.sent) return; // never sent: nothing to undo
    }
    this._unregisterQueue.add(registration.name);
    this._scheduleFlush();
  }

  _scheduleFlush() {
    if (this._flushScheduled) return;
    this._flushScheduled = true;
    // Everything registered in the same task goes out as one message.
    queueMicrotask(() => {
      this._flushScheduled = false;
      this.flush();
    });
  }

  flush() {
    if (!this._link.ready()) return; // sent after the next welcome
    if (this._unregisterQueue.size) {
      const names = [...this._unregisterQueue];
      this._unregisterQueue.clear();
      const id = this._link.nextId();
      this._requests.set(id, { kind: "unregister", names });
      this._link.send({ type: "agui.tools.unregister", id, tools: names });
    }
    if (!this._registerQueue.size) return;
    /** @type {types.Registration[][]} */
    const batches = [[]];
    let size = 0;
    for (const registration of this._registerQueue.values()) {
      const cost = JSON.stringify(registration.definition).length;
      if (size + cost > REGISTER_BATCH_CHARS && batches[batches.length - 1].length) {
        batches.push([]);
        size = 0;
      }
      batches[batches.length - 1].push(registration);
      size += cost;
    }
    this._registerQueue.clear();
    for (const batch of batches) {
      const id = this._link.nextId();
      for (const registration of batch) registration.sent = true;
      const names = batch.map((r) => r.name);
      this._requests.set(id, { kind: "register", names, waiting: names, registrations: batch });
      this._link.send({ type: "agui.tools.register", id, tools: batch.map((r) => r.definition) });
    }
  }
}
