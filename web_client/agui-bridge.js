/**
 * agui-bridge.js — the browser client of agui-mcp-bridge.
 *
 * One ES module, no build step, no dependencies. It speaks the page protocol of
 * docs/protocol.md: a WebSocket (`/agui/ws`) for what the page says, an
 * EventSource (the welcome's `events_url`) for what the page is asked.
 *
 *   import { connect, registerUserTools } from "http://127.0.0.1:8765/client/agui-bridge.js";
 *   const bridge = await connect({ room: "default" });
 *   await bridge.registerTool(
 *     { name: "read_cart", description: "The items in the cart.", inputSchema: { type: "object" } },
 *     async (params, { signal, progress }) => ({ items: cart.items }),
 *   );
 *   await registerUserTools(bridge);   // agui_user_confirm, agui_user_prompt, agui_user_choose
 *
 * Contents:
 *   1. AguiBridge / connect()      — connection, reconnection, tools, invocations
 *   2. Dialogs and user tools      — confirmDialog(), promptDialog(), chooseDialog(), registerUserTools()
 *   3. WebMCP adapter              — bridgeWebMCP(): mirror document.modelContext tools
 */

const MODULE_ORIGIN = (() => {
  try {
    return new URL(import.meta.url).origin;
  } catch {
    return globalThis.location ? globalThis.location.origin : "http://127.0.0.1:8765";
  }
})();

/** The connection states, in the order a healthy connection goes through them. */
export const STATES = Object.freeze(["connecting", "open", "reconnecting", "closed"]);

const CLOSE_NORMAL = 1000; // disconnect(): the bridge drops the page at once
const CLOSE_POLICY = 1008; // forbidden origin: retrying cannot help
const CLOSE_REPLACED = 4000; // a newer socket of this session took over

/** Errors the bridge answers a hello with; retrying with the same settings cannot help. */
const FATAL_HELLO_CODES = new Set(["unauthorized", "bad_room", "forbidden_origin", "bad_message"]);

const REGISTER_BATCH_CHARS = 256 * 1024; // split big registrations well below the bridge's 1 MiB limit
const FINISHED_CALLS_KEPT = 5000; // call ids remembered after they end, to ignore replays

/** An Error carrying the bridge's `agui.error` code. */
export class AguiBridgeError extends Error {
  constructor(message, { code = "error", detail = null } = {}) {
    super(message);
    this.name = "AguiBridgeError";
    this.code = code;
    this.detail = detail;
  }
}

function abortError(reason) {
  if (reason instanceof Error) return reason;
  return new DOMException(typeof reason === "string" ? reason : "The operation was aborted.", "AbortError");
}

/** A readable message for anything a handler may throw (Error, string, object, undefined…). */
export function errorMessage(thrown) {
  if (thrown instanceof Error || (thrown && typeof thrown === "object" && typeof thrown.message === "string")) {
    const message = thrown.message || thrown.name || "";
    return message || "The tool failed without a message.";
  }
  if (typeof thrown === "string") return thrown || "The tool failed without a message.";
  if (thrown === undefined || thrown === null) return `The tool failed (it threw ${thrown}).`;
  try {
    const json = JSON.stringify(thrown);
    if (json !== undefined) return `The tool failed: ${json}`;
  } catch {
    /* fall through */
  }
  return `The tool failed: ${String(thrown)}`;
}

function toWebSocketUrl(base) {
  const url = new URL("/agui/ws", base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

function checkDefinition(definition) {
  if (!definition || typeof definition !== "object") throw new TypeError("A tool definition must be an object.");
  const { name } = definition;
  if (typeof name !== "string" || name.length < 1 || name.length > 128) {
    throw new TypeError("A tool needs a name of 1 to 128 characters.");
  }
  const wire = { name, description: definition.description ?? "" };
  wire.inputSchema = definition.inputSchema ?? { type: "object", properties: {} };
  for (const key of ["outputSchema", "title", "annotations"]) {
    if (definition[key] !== undefined && definition[key] !== null) wire[key] = definition[key];
  }
  JSON.stringify(wire); // throws on cycles/BigInt now rather than when sending
  return wire;
}

/**
 * One page's connection to the bridge. Create it with `connect()`.
 *
 * Events (it is an EventTarget; every event is a CustomEvent with `detail`):
 * - `statechange` {state, previous}: connecting → open → reconnecting → open … → closed
 * - `error`       {code, message, call_id?, tool?, reply_to?}: an `agui.error` frame, or a client-side problem
 * - `session`     {session_id, room, resumed}: after every welcome
 * - `registered`  {tools: [{tool, name}]}: the bridge registered tools (their MCP names)
 * - `invoke`      {callId, tool, name, params}: a call started
 * - `result`      {callId, tool, result?, error?, ms}: a call was answered
 * - `cancel`      {callId, tool, reason}: the agent cancelled a call (or it timed out)
 * - `progress`    {callId, progress, total?, message?}
 */
export class AguiBridge extends EventTarget {
  constructor(options = {}) {
    super();
    const {
      url = MODULE_ORIGIN,
      room = "default",
      token = null,
      page = null,
      reconnectDelay = 250,
      maxReconnectDelay = 10_000,
      helloTimeout = 10_000,
      leaveOnPageHide = true,
      WebSocket: WebSocketImpl = globalThis.WebSocket,
      EventSource: EventSourceImpl = globalThis.EventSource,
    } = options;
    this.url = new URL(url, globalThis.location?.href).origin;
    this.room = room;
    this.token = token;
    this.pageInfo = page;
    this.options = { reconnectDelay, maxReconnectDelay, helloTimeout, leaveOnPageHide };
    this._WebSocket = WebSocketImpl;
    this._EventSource = EventSourceImpl;

    this.state = "connecting";
    /** The session id the bridge gave this page (kept in memory only: a reload is a new page). */
    this.sessionId = null;
    this.eventsUrl = null;

    this._ws = null;
    this._es = null;
    this._esSession = null;
    this._lastEventId = null;
    this._esRetry = null;
    this._attempt = 0;
    this._retryTimer = null;
    this._nextId = 1;
    this._closedByUser = false;
    this._suspended = false;

    this._tools = new Map(); // page name -> registration
    this._registerQueue = new Map(); // page name -> registration, sent at the next flush
    this._unregisterQueue = new Set(); // page names
    this._flushScheduled = false;
    this._requests = new Map(); // message id -> {kind, names}

    this._calls = new Map(); // call_id -> active call
    this._finished = new Set(); // call ids that ended (answered or cancelled)
    this._outbox = new Map(); // call_id -> answer waiting for a socket

    this._onPageHide = (event) => this._pageHidden(event);
    this._onPageShow = (event) => this._pageShown(event);
    this._onOnline = () => this._retryNow();
    if (leaveOnPageHide && typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("pagehide", this._onPageHide);
      globalThis.addEventListener("pageshow", this._onPageShow);
    }
    if (typeof globalThis.addEventListener === "function") globalThis.addEventListener("online", this._onOnline);
  }

  // --- public API ---------------------------------------------------------------------------

  /** Open the connection; resolves once the bridge welcomed the page and its event stream is open. */
  start() {
    if (!this._started) {
      this._started = new Promise((resolve, reject) => {
        this._firstConnect = { resolve, reject };
      });
      this._setState("connecting");
      this._open();
    }
    return this._started;
  }

  /** True while the WebSocket is open and welcomed. */
  get connected() {
    return this.state === "open";
  }

  /** The tools this page registered: [{name, mcpName, definition}]. */
  get tools() {
    return [...this._tools.values()].map((r) => ({ name: r.name, mcpName: r.mcpName, definition: r.definition }));
  }

  /** Calls this page is running now: [{callId, tool, params, startedAt}]. */
  get activeCalls() {
    return [...this._calls.values()].map((c) => ({ callId: c.callId, tool: c.tool, params: c.params,
      startedAt: c.startedAt }));
  }

  /**
   * Register a tool; resolves to the MCP name agents see. Registering a name again replaces the
   * definition and handler (the MCP name stays). Abort `signal` to unregister.
   */
  registerTool(definition, handler, { signal } = {}) {
    if (this.state === "closed") return Promise.reject(new AguiBridgeError("The bridge connection is closed.", { code: "closed" }));
    if (typeof handler !== "function") return Promise.reject(new TypeError("registerTool needs a handler function."));
    let wire;
    try {
      wire = checkDefinition(definition);
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(abortError(signal.reason));
    const registration = { name: wire.name, definition: wire, handler, mcpName: null, sent: false, signal };
    registration.promise = new Promise((resolve, reject) => {
      registration.resolve = resolve;
      registration.reject = reject;
    });
    registration.promise.catch(() => {}); // a caller that ignores the promise gets no unhandled rejection
    const previous = this._tools.get(wire.name);
    if (previous) {
      previous.detach?.();
      registration.mcpName = previous.mcpName;
      registration.sent = previous.sent;
      registration.replaces = previous.mcpName !== null; // the bridge has the previous definition
      // A caller still waiting on the previous registration learns the name from this one.
      registration.promise.then(previous.resolve, previous.reject);
    }
    this._tools.set(wire.name, registration);
    this._unregisterQueue.delete(wire.name);
    this._registerQueue.set(wire.name, registration);
    if (signal) {
      const onAbort = () => this._unregister(registration, signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      registration.detach = () => signal.removeEventListener("abort", onAbort);
    }
    this._scheduleFlush();
    return registration.promise;
  }

  /** Unregister tools by the names the page gave them. */
  unregisterTool(...names) {
    for (const name of names.flat()) {
      const registration = this._tools.get(name);
      if (registration) this._unregister(registration, "unregistered");
    }
  }

  /** Leave: closes with code 1000, so the bridge drops the page and its tools at once. */
  disconnect() {
    this._closedByUser = true;
    this._teardown(CLOSE_NORMAL, "disconnect()");
    this._abortAllCalls("The page disconnected from the bridge.");
    for (const registration of this._tools.values()) {
      registration.detach?.();
      registration.reject(new AguiBridgeError("The bridge connection was closed.", { code: "closed" }));
    }
    this._tools.clear();
    this._registerQueue.clear();
    this._unregisterQueue.clear();
    if (typeof globalThis.removeEventListener === "function") {
      globalThis.removeEventListener("pagehide", this._onPageHide);
      globalThis.removeEventListener("pageshow", this._onPageShow);
      globalThis.removeEventListener("online", this._onOnline);
    }
    this._setState("closed");
    if (this._firstConnect) {
      this._firstConnect.reject(new AguiBridgeError("disconnect() was called before the bridge answered.", { code: "closed" }));
      this._firstConnect = null;
    }
  }

  // --- connection ---------------------------------------------------------------------------

  _open() {
    clearTimeout(this._retryTimer);
    this._retryTimer = null;
    let ws;
    try {
      ws = new this._WebSocket(toWebSocketUrl(this.url));
    } catch (error) {
      this._attemptFailed(error);
      return;
    }
    this._ws = ws;
    const helloId = this._id();
    let welcomed = false;
    const helloTimer = setTimeout(() => {
      if (!welcomed && this._ws === ws) ws.close(4001, "no welcome");
    }, this.options.helloTimeout);

    ws.addEventListener("open", () => {
      const page = this.pageInfo ?? {};
      this._send({
        type: "agui.hello",
        id: helloId,
        room: this.room,
        session_id: this.sessionId,
        token: this.token,
        page: {
          url: page.url ?? globalThis.location?.href ?? null,
          title: page.title ?? globalThis.document?.title ?? null,
        },
      }, ws);
    });

    ws.addEventListener("message", (event) => {
      if (this._ws !== ws) return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        this._emitError({ code: "bad_frame", message: "The bridge sent a frame that is not JSON." });
        return;
      }
      if (!message || typeof message !== "object") return;
      if (message.type === "agui.welcome" && message.reply_to === helloId) {
        welcomed = true;
        clearTimeout(helloTimer);
        this._welcomed(message);
      } else if (message.type === "agui.error" && !welcomed &&
                 (message.reply_to === helloId || message.code === "forbidden_origin")) {
        clearTimeout(helloTimer);
        this._emitError(message);
        if (FATAL_HELLO_CODES.has(message.code)) this._fatal(message);
      } else {
        this._onMessage(message);
      }
    });

    ws.addEventListener("close", (event) => {
      clearTimeout(helloTimer);
      if (this._ws !== ws) return; // an older socket, already replaced
      this._ws = null;
      if (this._closedByUser || this._suspended || this.state === "closed") return;
      if (event.code === CLOSE_POLICY) {
        this._fatal({ code: "forbidden_origin", message: event.reason || "The bridge refused this page's origin." });
        return;
      }
      if (event.code === CLOSE_REPLACED) {
        // Our own older sockets are ignored above; this is a connection we did not make taking our session.
        this._emitError({ code: "replaced", message: "Another connection took over this page's session." });
        this._fatal({ code: "replaced", message: "Another connection took over this page's session." });
        return;
      }
      if (!welcomed) {
        this._attemptFailed(new AguiBridgeError(`Could not connect to the bridge at ${this.url} (code ${event.code}).`, { code: "unreachable" }));
      } else {
        this._setState("reconnecting");
        this._scheduleRetry();
      }
    });
  }

  _welcomed(message) {
    const resumed = Boolean(message.resumed) && message.session_id === this.sessionId;
    if (this.sessionId && !resumed) {
      // The bridge forgot our session (it restarted, or we were away past its grace period):
      // the calls we were running are already failed on its side, so stop them and drop their answers.
      this._abortAllCalls("The bridge lost this page's session.");
      this._outbox.clear();
    }
    this.sessionId = message.session_id;
    this.eventsUrl = new URL(message.events_url, this.url).href;
    this._attempt = 0;
    this._requests.clear(); // replies to requests on an older socket will not come
    this.dispatchEvent(new CustomEvent("session", { detail: { session_id: this.sessionId, room: message.room, resumed } }));

    // Keep a live event stream of the same session: it reconnects by itself with Last-Event-ID
    // and so misses nothing, not even a cancel sent while we were away.
    const keepStream = resumed && this._es && this._esSession === this.sessionId && this._es.readyState !== 2;
    const streamOpen = keepStream ? Promise.resolve() : this._openEvents();

    // Re-register everything (idempotent when resumed), then deliver answers held while away.
    // Tools dropped while away are unregistered on a resumed session; a new session never had them.
    for (const registration of this._tools.values()) this._registerQueue.set(registration.name, registration);
    if (!resumed) this._unregisterQueue.clear();
    this._flush();
    for (const [callId, answer] of this._outbox) {
      if (this._send(answer)) this._outbox.delete(callId);
    }

    streamOpen.then(() => {
      if (this._ws && this.sessionId === message.session_id && this.state !== "closed") {
        this._setState("open");
        if (this._firstConnect) {
          this._firstConnect.resolve(this);
          this._firstConnect = null;
        }
      }
    });
  }

  _openEvents() {
    clearTimeout(this._esRetry);
    if (this._es) this._es.close();
    // A new EventSource cannot send Last-Event-ID itself: within the same session, say where we
    // stopped, so a cancel sent while we were away still arrives.
    const sameSession = this._esSession === this.sessionId && this._lastEventId !== null;
    const url = sameSession ? `${this.eventsUrl}&last_event_id=${this._lastEventId}` : this.eventsUrl;
    if (!sameSession) this._lastEventId = null;
    const es = new this._EventSource(url);
    this._es = es;
    this._esSession = this.sessionId;
    es.addEventListener("agui.tool.invoke", (event) => this._onEvent(es, event, (m) => this._invoke(m)));
    es.addEventListener("agui.tool.cancel", (event) => this._onEvent(es, event, (m) => this._cancelled(m)));
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, 5000);
      es.addEventListener("open", done, { once: true });
      es.addEventListener("error", () => {
        if (es.readyState === 2) done();
        if (this._es !== es || es.readyState !== 2) return; // CONNECTING: the browser retries by itself
        this._emitError({ code: "events_failed", message: `The event stream ${this.eventsUrl} failed; retrying.` });
        // The stream failed for good (e.g. 404 for a session the bridge forgot). If our socket is
        // still welcomed, open a fresh stream (the bridge then replays the calls still waiting).
        this._esRetry = setTimeout(() => {
          if (this._es === es && this._ws && this.state === "open") this._openEvents();
        }, 1000);
      });
    });
  }

  _onEvent(es, event, act) {
    if (this._es !== es) return;
    if (/^\d+$/.test(event.lastEventId)) this._lastEventId = Number(event.lastEventId);
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      this._emitError({ code: "bad_event", message: "The bridge sent an event that is not JSON." });
      return;
    }
    if (message && typeof message.call_id === "string") act(message);
  }

  _attemptFailed(error) {
    this._ws = null;
    if (this._firstConnect && this._attempt === 0 && this.state === "connecting") {
      // The first connection failed: tell the caller rather than retry in the dark.
      this._firstConnect.reject(error);
      this._firstConnect = null;
      this._teardown(CLOSE_NORMAL, "failed");
      this._setState("closed");
      return;
    }
    this._setState("reconnecting");
    this._scheduleRetry();
  }

  _scheduleRetry() {
    if (this._retryTimer || this._closedByUser || this.state === "closed") return;
    const { reconnectDelay, maxReconnectDelay } = this.options;
    const base = Math.min(maxReconnectDelay, reconnectDelay * 2 ** this._attempt);
    const delay = base / 2 + Math.random() * (base / 2); // jitter, so many tabs do not stampede
    this._attempt += 1;
    this._retryTimer = setTimeout(() => {
      this._retryTimer = null;
      this._open();
    }, delay);
  }

  _retryNow() {
    if (this.state !== "reconnecting" || this._ws) return;
    this._attempt = 0;
    this._open();
  }

  _fatal(error) {
    const failure = new AguiBridgeError(error.message || "The bridge refused this page.", { code: error.code, detail: error });
    this._closedByUser = true;
    this._teardown(CLOSE_NORMAL, error.code);
    this._abortAllCalls(failure.message);
    this._setState("closed");
    if (this._firstConnect) {
      this._firstConnect.reject(failure);
      this._firstConnect = null;
    }
  }

  _teardown(code, reason) {
    clearTimeout(this._retryTimer);
    clearTimeout(this._esRetry);
    this._retryTimer = null;
    const ws = this._ws;
    this._ws = null;
    if (ws && ws.readyState <= 1) {
      try {
        ws.close(code, reason);
      } catch {
        /* already closing */
      }
    }
    if (this._es) this._es.close();
    this._es = null;
  }

  _pageHidden(event) {
    // Leaving the page (reload, navigation, tab closed): say so, so the bridge fails our calls
    // now instead of after its grace period. A reloaded page is a new page.
    if (this.state === "closed" || this._closedByUser) return;
    this._suspended = true;
    this._teardown(CLOSE_NORMAL, "pagehide");
    this._abortAllCalls("The page was left.");
    this._outbox.clear();
    this.sessionId = null;
    if (!event.persisted) this._setState("closed");
  }

  _pageShown(event) {
    // Back from the back/forward cache: come back as a new page and register our tools again.
    if (!event.persisted || !this._suspended || this._closedByUser) return;
    this._suspended = false;
    this._attempt = 0;
    this._setState("reconnecting");
    this._open();
  }

  _setState(state) {
    if (this.state === state) return;
    const previous = this.state;
    this.state = state;
    this.dispatchEvent(new CustomEvent("statechange", { detail: { state, previous } }));
  }

  _id() {
    return this._nextId++;
  }

  _send(message, ws = this._ws) {
    if (!ws || ws.readyState !== 1) return false;
    try {
      ws.send(JSON.stringify(message));
      return true;
    } catch (error) {
      this._emitError({ code: "send_failed", message: errorMessage(error) });
      return false;
    }
  }

  _emitError(detail) {
    this.dispatchEvent(new CustomEvent("error", { detail }));
  }

  // --- registrations ------------------------------------------------------------------------

  _unregister(registration, reason) {
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
    // Everything registered in the same task goes out as one message (a page adding 300 tools
    // sends a few frames, not 300).
    queueMicrotask(() => {
      this._flushScheduled = false;
      this._flush();
    });
  }

  _flush() {
    if (!this._ws || this._ws.readyState !== 1 || !this.sessionId) return; // sent after the next welcome
    if (this._unregisterQueue.size) {
      const names = [...this._unregisterQueue];
      this._unregisterQueue.clear();
      const id = this._id();
      this._requests.set(id, { kind: "unregister", names });
      this._send({ type: "agui.tools.unregister", id, tools: names });
    }
    if (!this._registerQueue.size) return;
    const batches = [[]];
    let size = 0;
    for (const registration of this._registerQueue.values()) {
      const cost = JSON.stringify(registration.definition).length;
      if (size + cost > REGISTER_BATCH_CHARS && batches.at(-1).length) {
        batches.push([]);
        size = 0;
      }
      batches.at(-1).push(registration);
      size += cost;
    }
    this._registerQueue.clear();
    for (const batch of batches) {
      const id = this._id();
      for (const registration of batch) registration.sent = true;
      this._requests.set(id, { kind: "register", names: batch.map((r) => r.name), registrations: batch });
      this._send({ type: "agui.tools.register", id, tools: batch.map((r) => r.definition) });
    }
  }

  _onMessage(message) {
    switch (message.type) {
      case "agui.tools.registered": {
        const request = this._requests.get(message.reply_to);
        const pairs = Array.isArray(message.tools) ? message.tools : [];
        for (const { tool, name } of pairs) {
          const registration = request?.registrations.find((r) => r.name === tool) ?? this._tools.get(tool);
          if (!registration) continue;
          registration.mcpName = name;
          registration.resolve(name);
        }
        if (request) {
          const answered = new Set(pairs.map((p) => p.tool));
          request.waiting = request.names.filter((n) => !answered.has(n)); // their invalid_tool errors follow
          if (!request.waiting.length) this._requests.delete(message.reply_to);
        }
        this.dispatchEvent(new CustomEvent("registered", { detail: { tools: pairs } }));
        break;
      }
      case "agui.tools.unregistered":
        this._requests.delete(message.reply_to);
        break;
      case "agui.error":
        this._bridgeError(message);
        break;
      default:
        break; // unknown bridge messages are ignored, as the protocol allows
    }
  }

  _bridgeError(message) {
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
      request.waiting = (request.waiting ?? request.names).filter((n) => n !== message.tool);
      if (!request.waiting.length) this._requests.delete(message.reply_to);
    }
    if (message.code === "unknown_tool" && request?.kind === "unregister") {
      // We unregistered a tool whose registration had not reached the bridge (e.g. it was just
      // reconnecting): the outcome is what we wanted.
      this._requests.delete(message.reply_to);
      return;
    }
    this._emitError(message);
  }

  // --- invocations --------------------------------------------------------------------------

  _invoke(message) {
    const callId = message.call_id;
    if (this._calls.has(callId) || this._finished.has(callId)) return; // a replay: answer each call once
    const registration = this._tools.get(message.tool);
    const controller = new AbortController();
    const call = {
      callId,
      tool: message.tool,
      name: message.name,
      params: message.params ?? {},
      controller,
      startedAt: Date.now(),
      done: false,
    };
    this._calls.set(callId, call);
    this.dispatchEvent(new CustomEvent("invoke", {
      detail: { callId, tool: call.tool, name: call.name, params: call.params, mcpRequestId: message.mcp_request_id },
    }));
    if (!registration) {
      this._answer(call, { error: { message: `This page has no tool named ${JSON.stringify(message.tool)} (any more).` } });
      return;
    }
    const context = {
      signal: controller.signal,
      callId,
      tool: call.tool,
      name: call.name,
      progress: (progress, total, text) => this._progress(call, progress, total, text),
    };
    let running;
    try {
      running = Promise.resolve(registration.handler(call.params, context));
    } catch (thrown) {
      running = Promise.reject(thrown);
    }
    running.then(
      (result) => this._answer(call, { result }),
      (thrown) => this._answer(call, { error: { message: errorMessage(thrown) } }),
    );
  }

  _answer(call, outcome) {
    if (call.done) return; // cancelled, or answered already: never answer twice
    call.done = true;
    this._finish(call.callId);
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
    if (!this._send(answer)) this._outbox.set(call.callId, answer); // delivered after we reconnect
    this.dispatchEvent(new CustomEvent("result", {
      detail: { callId: call.callId, tool: call.tool, result: answer.result, error: answer.error?.message,
        ms: Date.now() - call.startedAt },
    }));
  }

  _progress(call, progress, total, text) {
    if (call.done) return false;
    const value = Number(progress);
    if (!Number.isFinite(value)) throw new TypeError("progress() needs a finite number.");
    const message = { type: "agui.tool.progress", call_id: call.callId, progress: value };
    if (total !== undefined && total !== null && Number.isFinite(Number(total))) message.total = Number(total);
    if (text !== undefined && text !== null) message.message = String(text);
    this.dispatchEvent(new CustomEvent("progress", {
      detail: { callId: call.callId, progress: value, total: message.total, message: message.message },
    }));
    return this._send(message); // progress is advisory: dropped while disconnected
  }

  _cancelled(message) {
    const call = this._calls.get(message.call_id);
    this._outbox.delete(message.call_id);
    if (!call) {
      this._finish(message.call_id); // a late replay of its invocation must not start it
      return;
    }
    call.done = true;
    this._finish(call.callId);
    call.controller.abort(abortError(`Cancelled: ${message.reason || "cancelled by the agent"}`));
    this.dispatchEvent(new CustomEvent("cancel", {
      detail: { callId: call.callId, tool: call.tool, reason: message.reason || "cancelled by the agent" },
    }));
  }

  _finish(callId) {
    this._calls.delete(callId);
    this._finished.add(callId);
    if (this._finished.size > FINISHED_CALLS_KEPT) {
      this._finished.delete(this._finished.values().next().value);
    }
  }

  _abortAllCalls(reason) {
    for (const call of [...this._calls.values()]) {
      call.done = true;
      this._finish(call.callId);
      call.controller.abort(abortError(reason));
      this.dispatchEvent(new CustomEvent("cancel", { detail: { callId: call.callId, tool: call.tool, reason } }));
    }
  }
}

/**
 * Connect a page to the bridge.
 *
 * @param {object} [options]
 * @param {string} [options.url]   the bridge's base URL; default: where this module was loaded from
 * @param {string} [options.room]  default "default"
 * @param {string} [options.token] when the bridge runs with --token
 * @param {{url?: string, title?: string}} [options.page] how the page presents itself (default: location, title)
 * @returns {Promise<AguiBridge>}
 */
export async function connect(options = {}) {
  const bridge = new AguiBridge(options);
  await bridge.start();
  return bridge;
}

// =============================================================================================
// 2. Dialogs and user tools
// =============================================================================================

const STYLE_ID = "agui-bridge-styles";
const STYLES = `
.agui-dialog {
  --agui-bg: #ffffff; --agui-fg: #1b1f24; --agui-muted: #57606a; --agui-border: #d0d7de;
  --agui-accent: #0b57d0; --agui-accent-fg: #ffffff; --agui-focus: #0b57d0;
  box-sizing: border-box; width: min(28rem, calc(100vw - 2rem)); max-height: calc(100vh - 2rem);
  padding: 0; border: 1px solid var(--agui-border); border-radius: 12px;
  background: var(--agui-bg); color: var(--agui-fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  box-shadow: 0 20px 50px rgba(0, 0, 0, 0.25);
}
@media (prefers-color-scheme: dark) {
  .agui-dialog { --agui-bg: #1f2329; --agui-fg: #e6edf3; --agui-muted: #9da7b3; --agui-border: #3d444d;
    --agui-accent: #7cacf8; --agui-accent-fg: #0d1117; --agui-focus: #7cacf8; }
}
.agui-dialog::backdrop { background: rgba(15, 20, 25, 0.55); }
.agui-dialog *, .agui-dialog *::before, .agui-dialog *::after { box-sizing: border-box; }
.agui-dialog__form { display: flex; flex-direction: column; gap: 0.75rem; margin: 0; padding: 1.25rem 1.25rem 1rem; }
.agui-dialog__origin { margin: 0; font-size: 0.8rem; color: var(--agui-muted); letter-spacing: 0.02em; }
.agui-dialog__title { margin: 0; font-size: 1.15rem; line-height: 1.3; font-weight: 650; overflow-wrap: anywhere; }
.agui-dialog__body { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 50vh; overflow: auto; }
.agui-dialog__body:empty { display: none; }
.agui-dialog__label { font-weight: 600; font-size: 0.9rem; }
.agui-dialog__input { width: 100%; padding: 0.5rem 0.6rem; font: inherit; color: inherit; background: transparent;
  border: 1px solid var(--agui-border); border-radius: 8px; }
.agui-dialog__options { display: flex; flex-direction: column; gap: 0.4rem; margin: 0; padding: 0; border: 0;
  max-height: 45vh; overflow: auto; }
.agui-dialog__actions { display: flex; justify-content: flex-end; gap: 0.5rem; flex-wrap: wrap; margin-top: 0.25rem; }
.agui-dialog__button { min-height: 2.25rem; padding: 0.4rem 1rem; font: inherit; font-weight: 600; cursor: pointer;
  color: var(--agui-fg); background: transparent; border: 1px solid var(--agui-border); border-radius: 8px; }
.agui-dialog__button:hover { border-color: var(--agui-muted); }
.agui-dialog__button--primary { color: var(--agui-accent-fg); background: var(--agui-accent); border-color: var(--agui-accent); }
.agui-dialog__button--option { text-align: left; font-weight: 500; width: 100%; }
.agui-dialog__button:focus-visible, .agui-dialog__input:focus-visible {
  outline: 3px solid var(--agui-focus); outline-offset: 2px; }
@media (prefers-reduced-motion: no-preference) {
  .agui-dialog[open] { animation: agui-dialog-in 120ms ease-out; }
  @keyframes agui-dialog-in { from { opacity: 0; transform: translateY(6px) scale(0.98); } }
}
`;

function injectStyles(doc) {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = STYLES;
  (doc.head || doc.documentElement).append(style);
}

let dialogCounter = 0;
let dialogQueue = Promise.resolve();

function element(doc, tag, props = {}, children = []) {
  const node = doc.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/**
 * Show one modal dialog; dialogs wait for the one before them to close.
 * `build(parts)` adds the controls and returns {initialFocus, read(value)}.
 * Resolves to `read(returnValue)` ("cancel" on Escape), rejects with AbortError when `signal` aborts.
 */
function showDialog({ title, body, origin, build, signal, document: doc = globalThis.document }) {
  if (!doc) return Promise.reject(new Error("Dialogs need a document."));
  if (signal?.aborted) return Promise.reject(abortError(signal.reason));
  const turn = dialogQueue.then(() => new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal.reason));
      return;
    }
    injectStyles(doc);
    const id = `agui-dialog-${++dialogCounter}`;
    const dialog = element(doc, "dialog", {
      className: "agui-dialog", role: "dialog", "aria-modal": "true",
      "aria-labelledby": `${id}-title`, "aria-describedby": body ? `${id}-body` : null, "data-agui-dialog": id,
    });
    const form = element(doc, "form", { className: "agui-dialog__form", method: "dialog" });
    form.append(
      element(doc, "p", { className: "agui-dialog__origin", text: origin ?? "An AI agent asks you" }),
      element(doc, "h2", { className: "agui-dialog__title", id: `${id}-title`, text: String(title ?? "") }),
      element(doc, "p", { className: "agui-dialog__body", id: `${id}-body`, text: body ? String(body) : "" }),
    );
    const control = build({ doc, form, id, close: (value) => dialog.close(value) });
    dialog.append(form);
    const previousFocus = doc.activeElement;
    let settled = false;
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      if (dialog.open) dialog.close();
      dialog.remove();
      if (previousFocus && typeof previousFocus.focus === "function" && previousFocus.isConnected) {
        previousFocus.focus({ preventScroll: true });
      }
      outcome();
    };
    const onAbort = () => finish(() => reject(abortError(signal.reason)));
    signal?.addEventListener("abort", onAbort, { once: true });
    dialog.addEventListener("close", () => {
      const value = dialog.returnValue;
      finish(() => {
        try {
          resolve(control.read(value));
        } catch (error) {
          reject(error);
        }
      });
    });
    // Escape closes the dialog with an empty returnValue, which reads as "cancel".
    dialog.addEventListener("cancel", () => {
      dialog.returnValue = "";
    });
    doc.body.append(dialog);
    dialog.returnValue = "";
    dialog.showModal();
    control.initialFocus?.focus();
  }));
  dialogQueue = turn.catch(() => {});
  return turn;
}

function button(doc, text, { primary = false, value, kind } = {}) {
  const classes = ["agui-dialog__button"];
  if (primary) classes.push("agui-dialog__button--primary");
  if (kind) classes.push(`agui-dialog__button--${kind}`);
  return element(doc, "button", { type: "button", className: classes.join(" "), value, text });
}

/**
 * Ask the user to confirm. Resolves to "ok" or "cancel" (Escape and the backdrop's close are "cancel").
 * The Cancel button has the initial focus, so a reflexive Enter does not approve anything.
 */
export function confirmDialog({ title, body = "", ok_text = "OK", cancel_text = "Cancel", origin } = {}, { signal } = {}) {
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, close }) => {
      const cancel = button(doc, cancel_text || "Cancel", { value: "cancel" });
      const ok = button(doc, ok_text || "OK", { primary: true, value: "ok" });
      cancel.addEventListener("click", () => close("cancel"));
      ok.addEventListener("click", () => close("ok"));
      form.append(element(doc, "div", { className: "agui-dialog__actions" }, [cancel, ok]));
      return { initialFocus: cancel, read: (value) => (value === "ok" ? "ok" : "cancel") };
    },
  });
}

/** The error a prompt or choice rejects with when the user cancels. */
export class UserCancelledError extends Error {
  constructor(message = "The user cancelled.") {
    super(message);
    this.name = "UserCancelledError";
  }
}

/**
 * Ask the user for free text. Resolves to the text (possibly ""); rejects with UserCancelledError
 * when the user cancels (Cancel button or Escape).
 */
export function promptDialog({ title, body = "", placeholder = "", default: initial = "", ok_text = "OK",
  cancel_text = "Cancel", label = "Your answer", multiline = false, origin } = {}, { signal } = {}) {
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, id, close }) => {
      const input = element(doc, multiline ? "textarea" : "input", {
        id: `${id}-input`, className: "agui-dialog__input", placeholder: placeholder || null, autocomplete: "off",
        rows: multiline ? "4" : null, type: multiline ? null : "text",
      });
      input.value = initial ?? "";
      const cancel = button(doc, cancel_text || "Cancel");
      const ok = button(doc, ok_text || "OK", { primary: true });
      cancel.addEventListener("click", () => close("cancel"));
      ok.addEventListener("click", () => close("ok"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        close("ok");
      });
      form.append(
        element(doc, "label", { className: "agui-dialog__label", for: input.id, text: label }),
        input,
        element(doc, "div", { className: "agui-dialog__actions" }, [cancel, ok]),
      );
      return {
        initialFocus: input,
        read: (value) => {
          if (value !== "ok") throw new UserCancelledError("The user cancelled the prompt without answering.");
          return input.value;
        },
      };
    },
  });
}

/**
 * Ask the user to choose one of `options` (strings). Resolves to the chosen option; rejects with
 * UserCancelledError when the user cancels.
 */
export function chooseDialog({ title, body = "", options = [], cancel_text = "Cancel", origin } = {}, { signal } = {}) {
  const choices = (Array.isArray(options) ? options : []).map((o) => String(o));
  if (!choices.length) return Promise.reject(new TypeError("chooseDialog needs at least one option."));
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, id, close }) => {
      const group = element(doc, "div", { className: "agui-dialog__options", role: "group", "aria-labelledby": `${id}-title` });
      choices.forEach((choice, index) => {
        const option = button(doc, choice, { kind: "option", value: `option:${index}` });
        option.addEventListener("click", () => close(`option:${index}`));
        group.append(option);
      });
      const cancel = button(doc, cancel_text || "Cancel");
      cancel.addEventListener("click", () => close("cancel"));
      form.append(group, element(doc, "div", { className: "agui-dialog__actions" }, [cancel]));
      return {
        initialFocus: group.firstElementChild,
        read: (value) => {
          const match = /^option:(\d+)$/.exec(value || "");
          if (!match) throw new UserCancelledError("The user cancelled without choosing.");
          return choices[Number(match[1])];
        },
      };
    },
  });
}

const ASK_ANNOTATIONS = { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/** The built-in user tools' definitions (what agents see). */
export const USER_TOOLS = Object.freeze({
  confirm: {
    name: "agui_user_confirm",
    title: "Ask the user to confirm",
    description:
      "Show the user a modal dialog asking them to confirm or refuse an action (for example a payment or a deletion) " +
      "and wait for their decision. Returns the text \"ok\" if the user confirmed and \"cancel\" if they refused or " +
      "dismissed the dialog. Only proceed with the action on \"ok\".",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "A short question, e.g. \"Transfer 100 € to Alice?\"", minLength: 1 },
        body: { type: "string", description: "Details the user needs to decide (amounts, recipients, consequences)." },
        ok_text: { type: "string", description: "Label of the confirm button (default \"OK\"), e.g. \"Transfer\"." },
        cancel_text: { type: "string", description: "Label of the refuse button (default \"Cancel\")." },
      },
      required: ["title"],
    },
    annotations: ASK_ANNOTATIONS,
  },
  prompt: {
    name: "agui_user_prompt",
    title: "Ask the user for text",
    description:
      "Show the user a modal dialog with a question and a text field and wait for their answer. Returns the text " +
      "the user entered (possibly empty). If the user cancels, the call fails with an error saying so.",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "The question to ask.", minLength: 1 },
        body: { type: "string", description: "More context for the question." },
        placeholder: { type: "string", description: "Hint shown in the empty text field." },
        default: { type: "string", description: "Text the field starts with." },
      },
      required: ["title"],
    },
    annotations: ASK_ANNOTATIONS,
  },
  choose: {
    name: "agui_user_choose",
    title: "Ask the user to choose",
    description:
      "Show the user a modal dialog with a list of options and wait for them to pick one. Returns the chosen " +
      "option exactly as given. If the user cancels, the call fails with an error saying so.",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "The question to ask.", minLength: 1 },
        body: { type: "string", description: "More context for the choice." },
        options: {
          type: "array", items: { type: "string", minLength: 1 }, minItems: 1, maxItems: 50,
          description: "The options to choose from, as short labels.",
        },
      },
      required: ["title", "options"],
    },
    annotations: ASK_ANNOTATIONS,
  },
});

/**
 * Register the built-in user tools on a bridge (all three by default).
 * Resolves to the MCP names they got, e.g. {confirm: "agui_user_confirm", prompt: …, choose: …}.
 * Abort `signal` to unregister them.
 */
export async function registerUserTools(bridge, { confirm = true, prompt = true, choose = true, signal, origin } = {}) {
  const dialogs = {
    confirm: (params, ctx) => confirmDialog({ ...params, origin }, { signal: ctx.signal }),
    prompt: (params, ctx) => promptDialog({ ...params, origin }, { signal: ctx.signal }),
    choose: (params, ctx) => chooseDialog({ ...params, origin }, { signal: ctx.signal }),
  };
  const wanted = { confirm, prompt, choose };
  const names = {};
  await Promise.all(Object.keys(dialogs).filter((k) => wanted[k]).map(async (key) => {
    names[key] = await bridge.registerTool(USER_TOOLS[key], dialogs[key], { signal });
  }));
  return names;
}

// =============================================================================================
// 3. WebMCP adapter
// =============================================================================================

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

function webmcpDefinition(tool) {
  const definition = { name: tool.name, description: tool.description ?? "" };
  const inputSchema = parseSchema(tool.inputSchema);
  definition.inputSchema = inputSchema && typeof inputSchema === "object" && !Array.isArray(inputSchema)
    ? { type: "object", ...inputSchema } // the bridge wants "type": "object" at the root
    : { type: "object", properties: {} };
  if (tool.title) definition.title = tool.title;
  if (tool.outputSchema && typeof tool.outputSchema === "object") definition.outputSchema = tool.outputSchema;
  if (tool.annotations && typeof tool.annotations === "object") definition.annotations = { ...tool.annotations };
  return definition;
}

function parseResultJson(text) {
  if (text === null || text === undefined) return null;
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Serve the tools a page registers with WebMCP (`document.modelContext`) through the bridge, without
 * changing the page's code.
 *
 * - Tools registered from now on through `modelContext.registerTool(tool, {signal})` are mirrored,
 *   and unmirrored when `signal` aborts or `modelContext.unregisterTool(name)` is called (older API).
 *   Calls run `tool.execute(input, client)`, where `client` is {signal, requestUserInteraction(cb)}.
 * - Tools already registered (and any registered behind our back, seen through `toolchange`) are
 *   mirrored from `getTools()` and run through `modelContext.executeTool()` or
 *   `navigator.modelContextTesting.executeTool()`, when the runtime offers one.
 *
 * Returns {ready, tools, dispose()}: `ready` resolves once the existing tools are mirrored; `dispose()`
 * restores `registerTool` and unregisters the mirrored tools.
 */
export function bridgeWebMCP(bridge, { modelContext = globalThis.document?.modelContext, signal } = {}) {
  if (!modelContext || typeof modelContext.registerTool !== "function") {
    throw new TypeError("No WebMCP document.modelContext here: load a WebMCP runtime (e.g. @mcp-b/global) first.");
  }
  const mc = modelContext;
  const mirrored = new Map(); // name -> {controller, direct: boolean}
  const pending = new Set(); // names being registered through the wrapper
  const originalRegister = mc.registerTool;
  const originalUnregister = typeof mc.unregisterTool === "function" ? mc.unregisterTool : null;
  let disposed = false;

  const unmirror = (name) => {
    const entry = mirrored.get(name);
    if (!entry) return;
    mirrored.delete(name);
    entry.controller.abort("unregistered from WebMCP");
  };

  const mirror = (tool, run, direct, registrationSignal) => {
    if (disposed || !tool || typeof tool.name !== "string") return;
    if (registrationSignal?.aborted) return;
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

  const directRunner = (tool) => async (params, ctx) => {
    const client = {
      signal: ctx.signal,
      callId: ctx.callId,
      progress: ctx.progress,
      // WebMCP's ModelContextClient: the page asks for the user's attention; it already has the page.
      requestUserInteraction: async (callback) => callback(),
    };
    const result = await tool.execute(params, client);
    return result === undefined ? null : result;
  };

  const executeRunner = (registered) => async (params, ctx) => {
    const input = JSON.stringify(params ?? {});
    if (typeof mc.executeTool === "function") {
      return parseResultJson(await mc.executeTool(registered, input, { signal: ctx.signal }));
    }
    const testing = globalThis.navigator?.modelContextTesting;
    if (testing && typeof testing.executeTool === "function") {
      return parseResultJson(await testing.executeTool(registered.name, input, { signal: ctx.signal }));
    }
    throw new Error(`The WebMCP runtime offers no way to run ${registered.name}, registered before bridging.`);
  };

  const canExecute = () => typeof mc.executeTool === "function" ||
    typeof globalThis.navigator?.modelContextTesting?.executeTool === "function";

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
      bridge._emitError?.({ code: "webmcp", message: `getTools() failed: ${errorMessage(error)}` });
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

  function registerTool(tool, options, ...rest) {
    const name = tool?.name;
    if (typeof name === "string") pending.add(name);
    let returned;
    try {
      returned = originalRegister.call(this ?? mc, tool, options, ...rest);
    } catch (error) {
      pending.delete(name);
      throw error;
    }
    const after = () => {
      pending.delete(name);
      if (typeof tool?.execute === "function") mirror(tool, directRunner(tool), true, options?.signal);
    };
    if (returned && typeof returned.then === "function") {
      return returned.then((value) => {
        after();
        return value;
      }, (error) => {
        pending.delete(name);
        throw error;
      });
    }
    after();
    if (returned && typeof returned.unregister === "function") {
      // The older MCP-B API returned {unregister()}.
      const unregister = returned.unregister.bind(returned);
      returned.unregister = (...args) => {
        unmirror(name);
        return unregister(...args);
      };
    }
    return returned;
  }

  function unregisterTool(name, ...rest) {
    unmirror(name);
    return originalUnregister.call(this ?? mc, name, ...rest);
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
  signal?.addEventListener("abort", () => handle.dispose(), { once: true });
  return handle;
}
