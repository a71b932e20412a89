/**
 * connection.js — a page's connection to agui-mcp-bridge: connect(), reconnection with backoff,
 * session resume (after a dropped socket and after a reload of the page), tool registration and
 * the invocations agents make. Types: connection.d.ts; the wire contract: docs/protocol.md.
 *
 * The page talks on a WebSocket (`<bridge>/agui/ws`) and is asked on an EventSource (the
 * welcome's `events_url`). `<bridge>` is where the bridge is mounted, e.g. `http://127.0.0.1:8765/`
 * or `https://app.example/bridge/`: by default, the URL this module was served from, one level up
 * (`<bridge>/client/connection.js`).
 */
/** @import * as types from "./connection.js" */
import { AguiBridgeError, abortError, errorMessage } from "./errors.js";

/** @type {typeof types.STATES} */
export const STATES = Object.freeze(["connecting", "open", "reconnecting", "closed"]);

const DEFAULT_BRIDGE_URL = new URL("..", import.meta.url).href;

const CLOSE_NORMAL = 1000; // disconnect(): the bridge drops the page at once
const CLOSE_POLICY = 1008; // forbidden origin: retrying cannot help
const SENT_ANSWERS_KEPT = 200; // answers kept to send again if the bridge says it never got them
const CLOSE_REPLACED = 4000; // a newer socket of this session took over
const CLOSE_PAGE_HIDDEN = 4001; // pagehide: reloading or leaving; the bridge keeps the session for its grace period
const CLOSE_NO_WELCOME = 4002; // the bridge did not answer the hello in time

/** Errors the bridge answers a hello with; retrying with the same settings cannot help. */
const FATAL_HELLO_CODES = new Set(["unauthorized", "bad_room", "forbidden_origin", "bad_message"]);

const REGISTER_BATCH_CHARS = 256 * 1024; // split big registrations well below the bridge's 1 MiB limit
const FINISHED_CALLS_KEPT = 5000; // call ids remembered after they end, to ignore replays
const STORAGE_PREFIX = "agui-bridge.session ";

/**
 * A definition as sent to the bridge: the defaults filled in.
 * @typedef {types.ToolDefinition & {description: string, inputSchema: types.ObjectSchema}} WireToolDefinition
 */

/**
 * A tool this page registered.
 * @typedef {object} Registration
 * @property {string} name              the page's name for it
 * @property {WireToolDefinition} definition
 * @property {types.ToolHandler<any>} handler
 * @property {string | null} mcpName   the name agents see, once the bridge said it
 * @property {boolean} sent             the bridge has (or is being sent) a definition under this name
 * @property {boolean} replaces         the bridge has the definition this one replaces
 * @property {Promise<string>} promise  resolves to `mcpName`
 * @property {(name: string) => void} resolve
 * @property {(error: unknown) => void} reject
 * @property {(() => void) | null} detach  stops listening to the registration's signal
 */

/**
 * A call this page is running.
 * @typedef {object} Call
 * @property {string} callId
 * @property {string} tool
 * @property {string} name
 * @property {Record<string, unknown>} params
 * @property {AbortController} controller
 * @property {number} startedAt
 * @property {boolean} done  answered or cancelled: nothing more is sent for it
 */

/**
 * A register or unregister message waiting for the bridge's reply.
 * @typedef {{kind: "register", names: string[], waiting: string[], registrations: Registration[]}
 *   | {kind: "unregister", names: string[]}} PendingRequest
 */

/**
 * A bridge-to-page message (WebSocket frame or event stream event); the protocol names its fields.
 * @typedef {Record<string, any>} BridgeMessage
 */

/** @typedef {{session_id: string, tools: string[]}} StoredSession */

/**
 * The bridge's base URL (where it is mounted), ending with "/".
 * @param {string | URL} url
 */
function bridgeBase(url) {
  const base = new URL(url, globalThis.location?.href);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  base.search = "";
  base.hash = "";
  return base.href;
}

/** @param {string} base */
function webSocketUrl(base) {
  const url = new URL("agui/ws", base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

/**
 * The wire form of a definition; throws TypeError for one the bridge would refuse anyway.
 * @param {types.ToolDefinition} definition
 * @returns {WireToolDefinition}
 */
function checkDefinition(definition) {
  if (!definition || typeof definition !== "object") throw new TypeError("A tool definition must be an object.");
  const { name } = definition;
  if (typeof name !== "string" || name.length < 1 || name.length > 128) {
    throw new TypeError("A tool needs a name of 1 to 128 characters.");
  }
  /** @type {WireToolDefinition} */
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
  JSON.stringify(wire); // throws on cycles/BigInt now rather than when sending
  return wire;
}

// --- the session id across reloads -------------------------------------------------------------
//
// The id is written to sessionStorage on pagehide and taken out (read and removed) when the next
// page of the tab connects, rather than kept there while the page lives: a tab duplicated by the
// user, or a same-origin window the page opens, starts with a copy of sessionStorage, and would
// otherwise take the live page's session away from it.

/** sessionStorage, or null where it is unavailable (sandboxed frames, storage disabled, not a browser). */
function tabStorage() {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null;
  }
}

/**
 * @param {string} key
 * @returns {StoredSession | null}
 */
function takeStoredSession(key) {
  const storage = tabStorage();
  try {
    const text = storage?.getItem(key);
    storage?.removeItem(key);
    const stored = text ? JSON.parse(text) : null;
    return typeof stored?.session_id === "string" && Array.isArray(stored.tools) ? stored : null;
  } catch {
    return null;
  }
}

/**
 * @param {string} key
 * @param {StoredSession} session
 */
function storeSession(key, session) {
  try {
    tabStorage()?.setItem(key, JSON.stringify(session));
  } catch {
    /* storage full or refused: the next page starts a new session */
  }
}

/** @param {string} key */
function forgetStoredSession(key) {
  try {
    tabStorage()?.removeItem(key);
  } catch {
    /* nothing stored */
  }
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
 *
 * @implements {types.AguiBridge}
 */
export class AguiBridge extends EventTarget {
  /** @param {types.ConnectOptions} [options] */
  constructor(options = {}) {
    super();
    const {
      url = DEFAULT_BRIDGE_URL,
      room = "default",
      token = null,
      page = null,
      reconnectDelay = 250,
      maxReconnectDelay = 10_000,
      helloTimeout = 10_000,
      reregisterTimeout = 5000,
      leaveOnPageHide = false,
      WebSocket: WebSocketImpl = globalThis.WebSocket,
      EventSource: EventSourceImpl = globalThis.EventSource,
    } = options;
    this.url = bridgeBase(url);
    this.room = room;
    this.token = token;
    this.pageInfo = page;
    this.options = { reconnectDelay, maxReconnectDelay, helloTimeout, reregisterTimeout, leaveOnPageHide };
    this._WebSocket = WebSocketImpl;
    this._EventSource = EventSourceImpl;

    /** @type {types.ConnectionState} */
    this.state = "connecting";
    this._storageKey = `${STORAGE_PREFIX}${this.url} ${room}`;
    // The page this one replaces in the tab (a reload) left its session for us to resume.
    const previous = takeStoredSession(this._storageKey);
    /** @type {string | null} */
    this.sessionId = previous?.session_id ?? null;
    /** @type {string | null} */
    this.eventsUrl = null;

    /** @type {WebSocket | null} */
    this._ws = null;
    /** @type {EventSource | null} */
    this._es = null;
    /** @type {string | null} */
    this._esSession = null;
    /** @type {number | null} */
    this._lastEventId = null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._esRetry = undefined;
    this._attempt = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._retryTimer = undefined;
    this._nextId = 1;
    this._closedByUser = false;
    this._suspended = false; // hidden (pagehide): no reconnecting until the page is shown again
    /** @type {Promise<types.AguiBridge> | null} */
    this._started = null;
    /** @type {{resolve: (bridge: AguiBridge) => void, reject: (error: unknown) => void} | null} */
    this._firstConnect = null;

    /** @type {Map<string, Registration>} page name -> registration */
    this._tools = new Map();
    /** @type {Map<string, Registration>} sent at the next flush */
    this._registerQueue = new Map();
    /** @type {Set<string>} page names to unregister at the next flush */
    this._unregisterQueue = new Set();
    this._flushScheduled = false;
    /** @type {Map<number, PendingRequest>} message id -> request */
    this._requests = new Map();

    /** @type {Map<string, Call>} call_id -> active call */
    this._calls = new Map();
    /** @type {Set<string>} call ids that ended (answered or cancelled) */
    this._finished = new Set();
    /** @type {Map<string, BridgeMessage>} call_id -> answer waiting for a socket */
    this._outbox = new Map();
    /** @type {Map<string, BridgeMessage>} call_id -> the last answers sent, oldest first, in case one was lost */
    this._sent = new Map();

    // After a reload resumed the session: the previous page's tools that this page has not
    // registered again yet, and the invocations for them, held until it does (see _invoke).
    /** @type {Set<string> | null} */
    this._previousTools = previous ? new Set(previous.tools) : null;
    /** @type {Map<string, BridgeMessage>} call_id -> invocation */
    this._parked = new Map();
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._reregisterTimer = undefined;

    /** @param {PageTransitionEvent} event */
    this._onPageHide = (event) => this._pageHidden(event);
    /** @param {PageTransitionEvent} event */
    this._onPageShow = (event) => this._pageShown(event);
    this._onOnline = () => this._retryNow();
    if (typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("pagehide", this._onPageHide);
      globalThis.addEventListener("pageshow", this._onPageShow);
      globalThis.addEventListener("online", this._onOnline);
    }
  }

  // --- public API ---------------------------------------------------------------------------

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

  get connected() {
    return this.state === "open";
  }

  get tools() {
    return [...this._tools.values()].map((r) => ({ name: r.name, mcpName: r.mcpName, definition: r.definition }));
  }

  get activeCalls() {
    return [...this._calls.values()].map((c) => ({ callId: c.callId, tool: c.tool, params: c.params,
      startedAt: c.startedAt }));
  }

  /**
   * @param {types.ToolDefinition} definition
   * @param {types.ToolHandler<any>} handler
   * @param {types.RegisterOptions} [options]
   * @returns {Promise<string>}
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
    /** @type {(name: string) => void} */
    let resolve = () => {};
    /** @type {(error: unknown) => void} */
    let reject = () => {};
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {}); // a caller that ignores the promise gets no unhandled rejection
    /** @type {Registration} */
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
      const onAbort = () => this._unregister(registration, signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      registration.detach = () => signal.removeEventListener("abort", onAbort);
    }
    this._scheduleFlush();
    this._reregistered(wire.name);
    return promise;
  }

  /** @param {...(string | string[])} names */
  unregisterTool(...names) {
    for (const name of names.flat()) {
      const registration = this._tools.get(name);
      if (registration) this._unregister(registration, "unregistered");
    }
  }

  disconnect() {
    this._closedByUser = true;
    this._teardown(CLOSE_NORMAL, "disconnect()");
    this._endReregistration(false);
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
    this._settleFirstConnect(new AguiBridgeError("disconnect() was called before the bridge answered.", { code: "closed" }));
  }

  // --- connection ---------------------------------------------------------------------------

  _open() {
    clearTimeout(this._retryTimer);
    this._retryTimer = undefined;
    let ws;
    try {
      ws = new this._WebSocket(webSocketUrl(this.url));
    } catch (error) {
      this._attemptFailed(error);
      return;
    }
    this._ws = ws;
    const helloId = this._id();
    let welcomed = false;
    const helloTimer = setTimeout(() => {
      if (!welcomed && this._ws === ws) ws.close(CLOSE_NO_WELCOME, "no welcome");
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
      const message = this._parse(event.data, "bad_frame", "a frame");
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
        const replaced = { code: "replaced", message: "Another connection took over this page's session." };
        this._emitError(replaced);
        this._fatal(replaced);
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

  /** @param {BridgeMessage} message */
  _welcomed(message) {
    const resumed = Boolean(message.resumed) && message.session_id === this.sessionId;
    if (this.sessionId && !resumed) {
      // The bridge forgot our session (it restarted, or we were away past its grace period):
      // the calls we were running are already failed on its side, so stop them and drop their answers.
      this._endReregistration(false);
      this._abortAllCalls("The bridge lost this page's session.");
      this._outbox.clear();
      this._sent.clear();
    }
    this.sessionId = message.session_id;
    this.eventsUrl = new URL(message.events_url, this.url).href; // a path from the bridge's origin
    this._attempt = 0;
    this._requests.clear(); // replies to requests on an older socket will not come
    // First welcome after a reload: the resumed session still has the previous page's tools.
    if (resumed && this._previousTools && !this._reregisterTimer) this._awaitReregistration();
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
    // Calls the bridge still waits for that we answered: that answer died with the old connection.
    for (const callId of resumed && Array.isArray(message.waiting) ? message.waiting : []) {
      const answer = this._sent.get(callId);
      if (answer && !this._outbox.has(callId)) this._outbox.set(callId, answer);
    }
    for (const [callId, answer] of this._outbox) {
      if (this._send(answer)) this._outbox.delete(callId);
    }

    streamOpen.then(() => {
      if (this._ws && this.sessionId === message.session_id && this.state !== "closed") {
        this._setState("open");
        this._settleFirstConnect();
      }
    });
  }

  /** @returns {Promise<void>} resolves once the stream is open (or could not open) */
  _openEvents() {
    clearTimeout(this._esRetry);
    if (this._es) this._es.close();
    // A new EventSource cannot send Last-Event-ID itself: within the same session, say where we
    // stopped, so a cancel sent while we were away still arrives. A stream that does not say is
    // sent the invocations still waiting for this page (after a reload: those of the previous page).
    const sameSession = this._esSession === this.sessionId && this._lastEventId !== null;
    const url = sameSession ? `${this.eventsUrl}&last_event_id=${this._lastEventId}` : String(this.eventsUrl);
    if (!sameSession) this._lastEventId = null;
    const es = new this._EventSource(url);
    this._es = es;
    this._esSession = this.sessionId;
    es.addEventListener("agui.tool.invoke", (event) => this._onEvent(es, /** @type {MessageEvent} */ (event),
      (m) => this._invoke(m)));
    es.addEventListener("agui.tool.cancel", (event) => this._onEvent(es, /** @type {MessageEvent} */ (event),
      (m) => this._cancelled(m)));
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

  /**
   * Parses what the bridge sent; on bad JSON reports `code` and returns undefined.
   * @param {string} text
   * @param {string} code
   * @param {string} what
   * @returns {any}
   */
  _parse(text, code, what) {
    try {
      return JSON.parse(text);
    } catch {
      this._emitError({ code, message: `The bridge sent ${what} that is not JSON.` });
      return undefined;
    }
  }

  /**
   * @param {EventSource} es
   * @param {MessageEvent} event
   * @param {(message: BridgeMessage) => void} act
   */
  _onEvent(es, event, act) {
    if (this._es !== es) return;
    if (/^\d+$/.test(event.lastEventId)) this._lastEventId = Number(event.lastEventId);
    const message = this._parse(event.data, "bad_event", "an event");
    if (message && typeof message.call_id === "string") act(message);
  }

  /** @param {unknown} error */
  _attemptFailed(error) {
    this._ws = null;
    if (this._firstConnect && this._attempt === 0 && this.state === "connecting") {
      // The first connection failed: tell the caller rather than retry in the dark.
      this._settleFirstConnect(error);
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
      this._retryTimer = undefined;
      this._open();
    }, delay);
  }

  _retryNow() {
    if (this.state !== "reconnecting" || this._ws || this._suspended) return;
    this._attempt = 0;
    this._open();
  }

  /** @param {{code: string, message?: string}} error */
  _fatal(error) {
    const failure = new AguiBridgeError(error.message || "The bridge refused this page.", { code: error.code, detail: error });
    this._closedByUser = true;
    this._teardown(CLOSE_NORMAL, error.code);
    this._endReregistration(false);
    this._abortAllCalls(failure.message);
    this._setState("closed");
    this._settleFirstConnect(failure);
  }

  /**
   * Resolve (no error) or reject the promise of start(), once.
   * @param {unknown} [error]
   */
  _settleFirstConnect(error) {
    const first = this._firstConnect;
    this._firstConnect = null;
    if (!first) return;
    if (error === undefined) first.resolve(this);
    else first.reject(error);
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  _teardown(code, reason) {
    clearTimeout(this._retryTimer);
    clearTimeout(this._esRetry);
    this._retryTimer = undefined;
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

  /** @param {PageTransitionEvent} event */
  _pageHidden(event) {
    if (this.state === "closed" || this._closedByUser) return;
    this._suspended = true;
    if (this.options.leaveOnPageHide) {
      // Leave now, as disconnect() does: the bridge fails our calls at once; a reload is a new page.
      this._teardown(CLOSE_NORMAL, "pagehide");
      this._endReregistration(false);
      this._abortAllCalls("The page was left.");
      this._outbox.clear();
      this.sessionId = null;
    } else {
      // A reload (or a navigation, or the tab closing: a page cannot tell which) keeps the session:
      // the next page of this tab takes it from sessionStorage and resumes it within the bridge's
      // grace period, with the calls still waiting. So close with a code other than 1000, which
      // would make the bridge drop the session at once. Closing ourselves rather than letting the
      // browser drop the socket lets the page enter the back/forward cache (which refuses pages
      // with open WebSockets); the calls of a page that goes there are not stopped, and go on
      // when it is shown again. A page that is really left fails its calls after the grace period.
      if (this.sessionId) storeSession(this._storageKey, { session_id: this.sessionId, tools: [...this._tools.keys()] });
      this._teardown(CLOSE_PAGE_HIDDEN, "pagehide");
    }
    if (!event.persisted) this._setState("closed");
  }

  /** @param {PageTransitionEvent} event */
  _pageShown(event) {
    // Back from the back/forward cache: resume the session (a new one after leaveOnPageHide, or
    // past the bridge's grace period) and register our tools again.
    if (!event.persisted || !this._suspended || this._closedByUser) return;
    forgetStoredSession(this._storageKey);
    this._suspended = false;
    this._attempt = 0;
    this._setState("reconnecting");
    this._open();
  }

  /** @param {types.ConnectionState} state */
  _setState(state) {
    if (this.state === state) return;
    const previous = this.state;
    this.state = state;
    this.dispatchEvent(new CustomEvent("statechange", { detail: { state, previous } }));
  }

  _id() {
    return this._nextId++;
  }

  /**
   * @param {Record<string, unknown>} message
   * @param {WebSocket | null} [ws]
   */
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

  /** @param {types.BridgeErrorDetail} detail */
  _emitError(detail) {
    this.dispatchEvent(new CustomEvent("error", { detail }));
  }

  // --- registrations ------------------------------------------------------------------------

  /**
   * @param {Registration} registration
   * @param {unknown} reason
   */
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
    /** @type {Registration[][]} */
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
      const id = this._id();
      for (const registration of batch) registration.sent = true;
      const names = batch.map((r) => r.name);
      this._requests.set(id, { kind: "register", names, waiting: names, registrations: batch });
      this._send({ type: "agui.tools.register", id, tools: batch.map((r) => r.definition) });
    }
  }

  /** @param {BridgeMessage} message */
  _onMessage(message) {
    switch (message.type) {
      case "agui.tools.registered": {
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

  /** @param {BridgeMessage} message */
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
      request.waiting = request.waiting.filter((n) => n !== message.tool);
      if (!request.waiting.length) this._requests.delete(message.reply_to);
    }
    if (message.code === "unknown_tool" && request?.kind === "unregister") {
      // We unregistered a tool whose registration had not reached the bridge (e.g. it was just
      // reconnecting), or a tool of the previous page that it already lacked: the outcome is what we wanted.
      this._requests.delete(message.reply_to);
      return;
    }
    this._emitError(/** @type {types.BridgeErrorDetail} */ (message));
  }

  // --- after a reload -------------------------------------------------------------------------
  //
  // A reloaded page that resumed its session gets the invocations still waiting as soon as its
  // event stream opens, maybe before it has registered its tools again. Those calls are held
  // until it does, for `reregisterTimeout` ms at most; then the previous page's tools it has not
  // registered are unregistered (they have no handler any more) and the calls held for them fail.

  _awaitReregistration() {
    this._reregisterTimer = setTimeout(() => this._endReregistration(true), this.options.reregisterTimeout);
    for (const name of this._tools.keys()) this._reregistered(name);
  }

  /** @param {string} name  a tool this page (re)registered */
  _reregistered(name) {
    if (!this._previousTools || !this._reregisterTimer) return;
    this._previousTools.delete(name);
    for (const [callId, invocation] of this._parked) {
      if (invocation.tool !== name) continue;
      this._parked.delete(callId);
      this._invoke(invocation);
    }
    if (!this._previousTools.size) this._endReregistration(true);
  }

  /**
   * End the wait for the reloaded page's tools.
   * @param {boolean} settle  unregister the tools not registered again and fail the calls held for them
   *   (false: the session is gone or left, so there is nothing to tell the bridge)
   */
  _endReregistration(settle) {
    clearTimeout(this._reregisterTimer);
    this._reregisterTimer = undefined;
    const stale = this._previousTools ?? new Set();
    const parked = [...this._parked.values()];
    this._previousTools = null;
    this._parked.clear();
    if (!settle) return;
    for (const name of stale) this._unregisterQueue.add(name);
    if (stale.size) this._scheduleFlush();
    for (const invocation of parked) this._invoke(invocation); // no handler: each is answered with an error
  }

  // --- invocations --------------------------------------------------------------------------

  /** @param {BridgeMessage} message */
  _invoke(message) {
    const callId = message.call_id;
    if (this._calls.has(callId) || this._finished.has(callId) || this._parked.has(callId)) return; // a replay: answer each call once
    const registration = this._tools.get(message.tool);
    if (!registration && this._reregisterTimer) {
      this._parked.set(callId, message); // the reloaded page may not have registered it yet
      return;
    }
    /** @type {Call} */
    const call = {
      callId,
      tool: message.tool,
      name: message.name,
      params: message.params ?? {},
      controller: new AbortController(),
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
    /** @type {types.ToolCallContext} */
    const context = {
      signal: call.controller.signal,
      callId,
      tool: call.tool,
      name: call.name,
      progress: (progress, total, text) => this._progress(call, progress, total, text),
    };
    /** @type {Promise<types.ToolResult>} */
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

  /**
   * @param {Call} call
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
    if (!this._send(answer)) this._outbox.set(call.callId, answer); // delivered after we reconnect
    this._sent.set(call.callId, answer);
    for (const oldest of this._sent.keys()) {
      if (this._sent.size <= SENT_ANSWERS_KEPT) break;
      this._sent.delete(oldest);
    }
    this.dispatchEvent(new CustomEvent("result", {
      detail: { callId: call.callId, tool: call.tool, result: answer.result, error: answer.error?.message,
        ms: Date.now() - call.startedAt },
    }));
  }

  /**
   * @param {Call} call
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
    this.dispatchEvent(new CustomEvent("progress", {
      detail: { callId: call.callId, progress: value, total: message.total, message: message.message },
    }));
    return this._send(message); // progress is advisory: dropped while disconnected
  }

  /** @param {BridgeMessage} message */
  _cancelled(message) {
    const call = this._calls.get(message.call_id);
    this._outbox.delete(message.call_id);
    this._sent.delete(message.call_id);
    this._parked.delete(message.call_id);
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

  /** @param {string} callId */
  _finish(callId) {
    this._calls.delete(callId);
    this._finished.add(callId);
    if (this._finished.size > FINISHED_CALLS_KEPT) {
      this._finished.delete(this._finished.values().next().value ?? "");
    }
  }

  /** @param {string} reason */
  _abortAllCalls(reason) {
    for (const call of [...this._calls.values()]) {
      call.done = true;
      this._finish(call.callId);
      call.controller.abort(abortError(reason));
      this.dispatchEvent(new CustomEvent("cancel", { detail: { callId: call.callId, tool: call.tool, reason } }));
    }
  }
}

/** @type {typeof types.connect} */
export async function connect(options = {}) {
  const bridge = new AguiBridge(options);
  await bridge.start();
  return bridge;
}
