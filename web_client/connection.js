/**
 * connection.js — a page's connection to agui-mcp-bridge: connect() and AguiBridge, the page's
 * side of the protocol. It joins the modules beside it:
 *
 *   transport.js      the WebSocket, the event stream, reconnection with backoff, pagehide
 *   registrations.js  the page's tools and the (batched) messages that register them
 *   calls.js          the invocations agents make, their answers and the outbox
 *
 * and keeps a session across a dropped socket and across a reload of the page. Types:
 * connection.d.ts; the wire contract: docs/protocol.md.
 *
 * `<bridge>` is where the bridge is mounted, e.g. `http://127.0.0.1:8765/` or
 * `https://app.example/bridge/`: by default, the URL this module was served from, one level up
 * (`<bridge>/client/connection.js`).
 */
/** @import * as types from "./connection.js" */
/** @import { BridgeMessage } from "./transport.js" */
import { Calls } from "./calls.js";
import { AguiBridgeError } from "./errors.js";
import { Registrations } from "./registrations.js";
import { CLOSE_NORMAL, Transport } from "./transport.js";

/** @type {typeof types.STATES} */
export const STATES = Object.freeze(["connecting", "open", "reconnecting", "closed"]);

// The path in a variable: bundlers (Vite, webpack) take `new URL("<literal>", import.meta.url)` for an asset to bundle.
const PARENT = "..";
const DEFAULT_BRIDGE_URL = new URL(PARENT, import.meta.url).href;
const STORAGE_PREFIX = "agui-bridge.session ";

/** @typedef {{session_id: string, tools: string[]}} StoredSession */

// --- which tab its user is on ----------------------------------------------------------------
//
// Tabs of one app share their tools' names at the bridge, which sends each call to the tab used
// last: the page says whether its user is on it in its hello, and sends agui.page.active whenever
// that becomes so (its tab shown, or its window focused).

/** The page is shown and its window focused (true outside a browser). */
function pageInUse() {
  const doc = globalThis.document;
  return !doc || (doc.visibilityState !== "hidden" && (typeof doc.hasFocus !== "function" || doc.hasFocus()));
}

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
 * One page's connection to the bridge. Create it with `connect()`, or with `new AguiBridge()`
 * and `start()` to listen to it (and register tools) before it connects.
 *
 * Events (it is an EventTarget; every event is a CustomEvent with `detail`):
 * - `statechange` {state, previous}: connecting → open → reconnecting → open … → closed
 *   (connecting → reconnecting while the bridge cannot be reached yet)
 * - `error`       {code, message, call_id?, tool?, reply_to?}: an `agui.error` frame, or a client-side problem
 *   (`unreachable` {url, webSocketUrl, attempts, since, hint}: after a few failed attempts, then rarely)
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
      unreachableAfter = 3,
      reregisterTimeout = 5000,
      leaveOnPageHide = false,
      WebSocket: WebSocketImpl = globalThis.WebSocket,
      EventSource: EventSourceImpl = globalThis.EventSource,
    } = options;
    this.url = bridgeBase(url);
    this.room = room;
    this.token = token;
    this.pageInfo = page;
    this.options = { reconnectDelay, maxReconnectDelay, helloTimeout, unreachableAfter, reregisterTimeout,
      leaveOnPageHide };

    this._storageKey = `${STORAGE_PREFIX}${this.url} ${room}`;
    // The page this one replaces in the tab (a reload) left its session for us to resume.
    const previous = takeStoredSession(this._storageKey);

    this._transport = new Transport(this.url,
      { reconnectDelay, maxReconnectDelay, helloTimeout, unreachableAfter, leaveOnPageHide,
        WebSocket: WebSocketImpl, EventSource: EventSourceImpl },
      {
        hello: () => this._hello(),
        welcomed: (message, resumed, lost) => this._welcomed(message, resumed, lost),
        received: (message) => this._received(message),
        asked: (type, message) => (type === "agui.tool.invoke" ? this._calls.invoke(message) : this._calls.cancelled(message)),
        stateChanged: (state, previous) => this._stateChanged(state, previous),
        error: (detail) => this._emit("error", detail),
        closing: (failure) => this._closing(failure),
        hidden: (leaving) => this._hidden(leaving),
        shown: () => forgetStoredSession(this._storageKey),
      },
      previous?.session_id ?? null);
    this._registrations = new Registrations({
      ready: () => this._transport.ready,
      nextId: () => this._transport.nextId(),
      send: (message) => this._transport.send(message),
      added: (name) => this._reregistered(name),
    });
    this._calls = new Calls({
      handler: (tool) => this._registrations.get(tool)?.handler,
      holding: () => this._reregisterTimer !== undefined,
      send: (message) => this._transport.send(message),
      emit: (type, detail) => this._emit(type, detail),
    });

    this._inUse = pageInUse();
    this._onUse = () => this._useChanged();
    globalThis.document?.addEventListener?.("visibilitychange", this._onUse);
    for (const type of ["focus", "blur"]) globalThis.addEventListener?.(type, this._onUse);

    /** @type {Promise<types.AguiBridge> | null} */
    this._started = null;
    /** @type {{resolve: (bridge: AguiBridge) => void, reject: (error: unknown) => void} | null} */
    this._firstConnect = null;

    // After a reload resumed the session: the previous page's tools that this page has not
    // registered again yet; the calls for them are held until it does (see _awaitReregistration).
    /** @type {Set<string> | null} */
    this._previousTools = previous ? new Set(previous.tools) : null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._reregisterTimer = undefined;
  }

  // --- public API ---------------------------------------------------------------------------

  get state() {
    return this._transport.state;
  }

  get sessionId() {
    return this._transport.sessionId;
  }

  get eventsUrl() {
    return this._transport.eventsUrl;
  }

  start() {
    if (!this._started) {
      if (this.state === "closed") {
        return Promise.reject(new AguiBridgeError("The bridge connection is closed.", { code: "closed" }));
      }
      this._started = new Promise((resolve, reject) => {
        this._firstConnect = { resolve, reject };
      });
      this._transport.start();
    }
    return this._started;
  }

  get connected() {
    return this.state === "open";
  }

  get tools() {
    return this._registrations.list();
  }

  get activeCalls() {
    return this._calls.active;
  }

  get heldCalls() {
    return [...this._calls.parked.values()].map((m) => ({ callId: String(m.call_id), tool: String(m.tool),
      params: /** @type {Record<string, unknown>} */ (m.params ?? {}), startedAt: NaN }));
  }

  /**
   * @param {types.ToolDefinition} definition
   * @param {types.ToolHandler<any>} handler
   * @param {types.RegisterOptions} [options]
   * @returns {Promise<string>}
   */
  registerTool(definition, handler, { signal } = {}) {
    if (this.state === "closed") return Promise.reject(new AguiBridgeError("The bridge connection is closed.", { code: "closed" }));
    return this._registrations.add(definition, handler, signal);
  }

  /** @param {...(string | string[])} names */
  unregisterTool(...names) {
    for (const name of names.flat()) this._registrations.remove(name, "unregistered");
  }

  disconnect() {
    this._transport.close(CLOSE_NORMAL, "disconnect()");
  }

  // --- what the transport tells -------------------------------------------------------------

  _hello() {
    const page = this.pageInfo ?? {};
    this._inUse = pageInUse();
    return {
      room: this.room,
      token: this.token,
      page: {
        url: page.url ?? globalThis.location?.href ?? null,
        title: page.title ?? globalThis.document?.title ?? null,
      },
      active: this._inUse,
    };
  }

  /** The tab was shown or hidden, focused or left: the bridge hears when its user comes to it. */
  _useChanged() {
    const inUse = pageInUse();
    if (inUse && !this._inUse) this._transport.send({ type: "agui.page.active" });
    this._inUse = inUse;
  }

  /**
   * @param {BridgeMessage} message
   * @param {boolean} resumed
   * @param {boolean} lost
   */
  _welcomed(message, resumed, lost) {
    if (lost) {
      // The bridge forgot our session (it restarted, or we were away past its grace period):
      // the calls we were running are already failed on its side, so stop them and drop their answers.
      this._endReregistration(false);
      this._calls.abortAll("The bridge lost this page's session.");
      this._calls.forgetAnswers();
    }
    // First welcome after a reload: the resumed session still has the previous page's tools.
    if (resumed && this._previousTools && !this._reregisterTimer) this._awaitReregistration();
    this._emit("session", { session_id: message.session_id, room: message.room, resumed });
    this._registrations.welcomed(resumed);
    this._calls.deliver(resumed && Array.isArray(message.waiting) ? message.waiting : []);
  }

  /** @param {BridgeMessage} message */
  _received(message) {
    switch (message.type) {
      case "agui.tools.registered":
        this._emit("registered", { tools: this._registrations.registered(message) });
        break;
      case "agui.tools.unregistered":
        this._registrations.unregistered(message);
        break;
      case "agui.error":
        if (!this._registrations.refused(message)) this._emit("error", /** @type {types.BridgeErrorDetail} */ (message));
        break;
      default:
        break; // unknown bridge messages are ignored, as the protocol allows
    }
  }

  /**
   * @param {types.ConnectionState} state
   * @param {types.ConnectionState} previous
   */
  _stateChanged(state, previous) {
    this._emit("statechange", { state, previous });
    if (state === "open") this._settleFirstConnect();
    if (state === "closed") {
      this._settleFirstConnect(this._transport.failure ??
        new AguiBridgeError("The connection was closed before the bridge welcomed the page.", { code: "closed" }));
    }
  }

  /** @param {AguiBridgeError | null} failure  why the bridge refused the page; null: disconnect() */
  _closing(failure) {
    globalThis.document?.removeEventListener?.("visibilitychange", this._onUse);
    for (const type of ["focus", "blur"]) globalThis.removeEventListener?.(type, this._onUse);
    this._endReregistration(false);
    this._calls.abortAll(failure?.message ?? "The page disconnected from the bridge.");
    this._registrations.close(failure ?? new AguiBridgeError("The bridge connection was closed.", { code: "closed" }));
  }

  /** @param {boolean} leaving */
  _hidden(leaving) {
    if (leaving) {
      this._endReregistration(false);
      this._calls.abortAll("The page was left.");
      this._calls.forgetAnswers();
    } else if (this.sessionId) {
      storeSession(this._storageKey, { session_id: this.sessionId, tools: this._registrations.names });
    }
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
   * @param {string} type
   * @param {unknown} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  // --- after a reload -------------------------------------------------------------------------
  //
  // A reloaded page that resumed its session gets the invocations still waiting as soon as its
  // event stream opens, maybe before it has registered its tools again. Those calls are held
  // until it does, for `reregisterTimeout` ms at most; then the previous page's tools it has not
  // registered are unregistered (they have no handler any more) and the calls held for them fail.

  _awaitReregistration() {
    this._reregisterTimer = setTimeout(() => this._endReregistration(true), this.options.reregisterTimeout);
    for (const name of this._registrations.names) this._reregistered(name);
  }

  /** @param {string} name  a tool this page (re)registered */
  _reregistered(name) {
    if (!this._previousTools || !this._reregisterTimer) return;
    this._previousTools.delete(name);
    this._calls.release(name);
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
    this._previousTools = null;
    if (settle && stale.size) this._registrations.unregister(stale);
    this._calls.unpark(settle); // held calls now find no handler: each is answered with an error
  }
}

/** @type {typeof types.connect} */
export async function connect(options = {}) {
  const bridge = new AguiBridge(options);
  await bridge.start();
  return bridge;
}
