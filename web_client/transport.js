/**
 * transport.js — how a page reaches the bridge: the WebSocket it speaks on, the event stream it is
 * asked on, the hello that opens (or resumes) its session, reconnection with backoff, and what
 * `pagehide`, `pageshow` and `online` do to them. It knows nothing of tools or calls: the page
 * protocol that owns it (connection.js) does. Types: transport.d.ts.
 */
/** @import * as types from "./transport.js" */
/** @import { BridgeErrorDetail, ConnectionState, UnreachableDetail } from "./connection.js" */
import { AguiBridgeError, errorMessage } from "./errors.js";

export const CLOSE_NORMAL = 1000; // disconnect(): the bridge drops the page at once
const CLOSE_POLICY = 1008; // a refusal: forbidden origin, or a token refused
const CLOSE_REPLACED = 4000; // a newer socket of this session took over
const CLOSE_PAGE_HIDDEN = 4001; // pagehide: reloading or leaving; the bridge keeps the session for its grace period
const CLOSE_NO_WELCOME = 4002; // the bridge did not welcome the hello: try again later

/** Refusals of a hello that trying again with the same settings cannot fix. */
const FATAL_HELLO_CODES = new Set(["unauthorized", "bad_room", "forbidden_origin", "bad_message"]);

/** @param {string} base  the bridge's base URL */
function webSocketUrl(base) {
  const url = new URL("agui/ws", base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

/**
 * The attempts in a row that did not reach the bridge (nothing listens there, or it is not the
 * bridge). Reported after `reportAfter` of them, then each time their count doubles: said soon,
 * then rarely, however long the page waits (it may well be open before the bridge starts).
 */
class Outage {
  /**
   * @param {string} url  the bridge's base URL
   * @param {number} reportAfter
   */
  constructor(url, reportAfter) {
    this.url = url;
    this.webSocketUrl = webSocketUrl(url);
    this.reportAfter = Math.max(1, reportAfter);
    this.attempts = 0;
    this.since = 0; // Date.now() of the first failed attempt
    this._nextReport = this.reportAfter;
  }

  /**
   * One more attempt failed.
   * @returns {UnreachableDetail | null} what to report now, if anything
   */
  failed() {
    if (this.attempts === 0) this.since = Date.now();
    this.attempts += 1;
    if (this.attempts < this._nextReport) return null;
    this._nextReport = this.attempts * 2;
    const { host } = new URL(this.url);
    const seconds = ((Date.now() - this.since) / 1000).toFixed(1);
    const hint = `Is the bridge running (agui-mcp-bridge serve, or the agent that starts it), and on ${host}? ` +
      "connect({ url }) must name where it listens (port 8765 unless started with --port), with its mount " +
      "prefix when it is mounted in an app.";
    return {
      code: "unreachable", url: this.url, webSocketUrl: this.webSocketUrl, attempts: this.attempts,
      since: this.since, hint,
      message: `Cannot reach the bridge at ${this.url} (its WebSocket ${this.webSocketUrl}: ${this.attempts} ` +
        `attempts in ${seconds} s; still trying). ${hint}`,
    };
  }

  /** The bridge welcomed the page: how many attempts had failed, if the outage was reported (else 0). */
  ended() {
    const reported = this.attempts >= this.reportAfter ? this.attempts : 0;
    this.attempts = 0;
    this._nextReport = this.reportAfter;
    return reported;
  }
}

/** @implements {types.Transport} */
export class Transport {
  /**
   * @param {string} url  the bridge's base URL, ending with "/"
   * @param {types.TransportOptions} options
   * @param {types.TransportOwner} owner
   * @param {string | null} sessionId  a session to resume (the previous page of the tab left it)
   */
  constructor(url, options, owner, sessionId) {
    this.url = url;
    this.options = options;
    this._owner = owner;
    /** @type {ConnectionState} */
    this.state = "connecting";
    this.sessionId = sessionId;
    /** @type {string | null} */
    this.eventsUrl = null;
    /** @type {AguiBridgeError | null} */
    this.failure = null;

    /** @type {WebSocket | null} */
    this.ws = null;
    /** @type {EventSource | null} */
    this.events = null;
    /** @type {string | null} the session `events` belongs to */
    this._eventsSession = null;
    /** @type {number | null} */
    this.lastEventId = null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._eventsRetry = undefined;

    this._nextId = 1;
    this._attempt = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._retryTimer = undefined;
    this._notBefore = 0; // Date.now() before which no attempt is made (the bridge's retry_after)
    this._welcomedOnce = false;
    this._outage = new Outage(url, options.unreachableAfter);
    this._stopped = false; // closed for good (disconnect() or a refusal)
    this._suspended = false; // hidden (pagehide): no reconnecting until the page is shown again

    /** @param {PageTransitionEvent} event */
    this._onPageHide = (event) => this._pageHidden(event);
    /** @param {PageTransitionEvent} event */
    this._onPageShow = (event) => this._pageShown(event);
    this._onOnline = () => this.retryNow();
    if (typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("pagehide", this._onPageHide);
      globalThis.addEventListener("pageshow", this._onPageShow);
      globalThis.addEventListener("online", this._onOnline);
    }
  }

  /** An id for a page message; the bridge's reply carries it back as `reply_to`. */
  nextId() {
    return this._nextId++;
  }

  start() {
    this._setState("connecting");
    this._open();
  }

  /**
   * @param {Record<string, unknown>} message
   * @param {WebSocket | null} [ws]
   */
  send(message, ws = this.ws) {
    if (!ws || ws.readyState !== 1) return false;
    try {
      ws.send(JSON.stringify(message));
      return true;
    } catch (error) {
      this._owner.error({ code: "send_failed", message: errorMessage(error) });
      return false;
    }
  }

  get ready() {
    return Boolean(this.ws && this.ws.readyState === 1 && this.sessionId);
  }

  /**
   * Close for good: the owner winds down (`closing`), then the state is "closed".
   * @param {number} code
   * @param {string} reason
   * @param {AguiBridgeError | null} [failure]  why, when the bridge refused the page
   */
  close(code, reason, failure = null) {
    if (this._stopped) return;
    this._stopped = true;
    this.failure = failure;
    this._teardown(code, reason);
    if (typeof globalThis.removeEventListener === "function") {
      globalThis.removeEventListener("pagehide", this._onPageHide);
      globalThis.removeEventListener("pageshow", this._onPageShow);
      globalThis.removeEventListener("online", this._onOnline);
    }
    this._owner.closing(failure);
    this._setState("closed");
  }

  // --- the socket -----------------------------------------------------------------------------

  _open() {
    clearTimeout(this._retryTimer);
    this._retryTimer = undefined;
    let ws;
    try {
      ws = new this.options.WebSocket(webSocketUrl(this.url));
    } catch (error) {
      // A URL the browser refuses outright (malformed, or ws: from an https: page): no attempt can succeed.
      this._refused({ code: "unreachable", message: `Cannot open a WebSocket to the bridge at ${this.url}: ${errorMessage(error)}` });
      return;
    }
    this.ws = ws;
    const helloId = this.nextId();
    let welcomed = false;
    /** @type {BridgeErrorDetail | null} */
    let refusal = null; // the bridge's refusal of this hello, if any
    const helloTimer = setTimeout(() => {
      if (!welcomed && this.ws === ws) ws.close(CLOSE_NO_WELCOME, "no welcome");
    }, this.options.helloTimeout);

    ws.addEventListener("open", () => {
      this.send({ ...this._owner.hello(), type: "agui.hello", id: helloId, session_id: this.sessionId }, ws);
    });

    ws.addEventListener("message", (event) => {
      if (this.ws !== ws) return;
      const message = this._parse(event.data, "bad_frame", "a frame");
      if (!message || typeof message !== "object") return;
      if (message.type === "agui.welcome" && message.reply_to === helloId) {
        welcomed = true;
        clearTimeout(helloTimer);
        this._welcomed(message);
      } else if (message.type === "agui.error" && !welcomed &&
                 (message.reply_to === helloId || message.code === "forbidden_origin")) {
        clearTimeout(helloTimer);
        refusal = message;
        this._owner.error(message);
        this._helloRefused(ws, message);
      } else {
        this._owner.received(message);
      }
    });

    ws.addEventListener("close", (event) => {
      clearTimeout(helloTimer);
      if (this.ws !== ws) return; // an older socket, already replaced
      this.ws = null;
      if (this._stopped || this._suspended || this.state === "closed") return;
      if (event.code === CLOSE_POLICY && !refusal) {
        this._refused({ code: "forbidden_origin", message: event.reason || "The bridge refused this page's origin." });
        return;
      }
      if (event.code === CLOSE_REPLACED) {
        // Our own older sockets are ignored above; this is a connection we did not make taking our session.
        const replaced = { code: "replaced", message: "Another connection took over this page's session." };
        this._owner.error(replaced);
        this._refused(replaced);
        return;
      }
      if (!welcomed && !refusal) this._attemptFailed();
      this._setState("reconnecting");
      this._scheduleRetry();
    });
  }

  /**
   * The bridge answered the hello with an error.
   * @param {WebSocket} ws
   * @param {BridgeErrorDetail} error
   */
  _helloRefused(ws, error) {
    const retryAfter = Number(error.retry_after);
    if (error.code === "too_many_attempts" && this._welcomedOnce && Number.isFinite(retryAfter)) {
      // Its token was taken before: other wrong guesses from this address slow everyone down for a while.
      this._notBefore = Date.now() + retryAfter * 1000;
    } else if (FATAL_HELLO_CODES.has(error.code) || error.code === "too_many_attempts") {
      // Retrying cannot help, or (too many wrong tokens) whoever called connect() must hear it now.
      this._refused(error);
      return;
    }
    ws.close(CLOSE_NO_WELCOME, "hello refused"); // and try again, with backoff
  }

  /** A socket closed before the bridge welcomed the page, and not because the bridge refused it. */
  _attemptFailed() {
    const report = this._outage.failed();
    if (!report) return;
    // In the console too: a page pointed at the wrong port otherwise shows only the browser's own
    // connection errors, which name no cause.
    console.warn(`agui-bridge: ${report.message}`);
    this._owner.error(report);
  }

  /** @param {{code: string, message?: string}} error */
  _refused(error) {
    const failure = new AguiBridgeError(error.message || "The bridge refused this page.", { code: error.code, detail: error });
    this.close(CLOSE_NORMAL, error.code, failure);
  }

  /** @param {types.BridgeMessage} message */
  _welcomed(message) {
    const resumed = Boolean(message.resumed) && message.session_id === this.sessionId;
    const lost = this.sessionId !== null && !resumed;
    this.sessionId = message.session_id;
    this.eventsUrl = new URL(message.events_url, this.url).href; // a path from the bridge's origin
    this._attempt = 0;
    this._welcomedOnce = true;
    const failed = this._outage.ended();
    if (failed) console.info(`agui-bridge: connected to the bridge at ${this.url} after ${failed} failed attempts.`);
    // Keep a live event stream of the same session: it reconnects by itself with Last-Event-ID
    // and so misses nothing, not even a cancel sent while we were away.
    const keepStream = resumed && this.events && this._eventsSession === this.sessionId && this.events.readyState !== 2;
    const streamOpen = keepStream ? Promise.resolve() : this.openEvents();
    this._owner.welcomed(message, resumed, lost);
    streamOpen.then(() => {
      if (this.ws && this.sessionId === message.session_id && this.state !== "closed") this._setState("open");
    });
  }

  // --- the event stream -----------------------------------------------------------------------

  /** @returns {Promise<void>} resolves once the stream is open (or could not open) */
  openEvents() {
    clearTimeout(this._eventsRetry);
    if (this.events) this.events.close();
    // A new EventSource cannot send Last-Event-ID itself: within the same session, say where we
    // stopped, so a cancel sent while we were away still arrives. A stream that does not say is
    // sent the invocations still waiting for this page (after a reload: those of the previous page).
    const sameSession = this._eventsSession === this.sessionId && this.lastEventId !== null;
    const url = sameSession ? `${this.eventsUrl}&last_event_id=${this.lastEventId}` : String(this.eventsUrl);
    if (!sameSession) this.lastEventId = null;
    const es = new this.options.EventSource(url);
    this.events = es;
    this._eventsSession = this.sessionId;
    for (const type of /** @type {const} */ (["agui.tool.invoke", "agui.tool.cancel"])) {
      es.addEventListener(type, (event) => this._onEvent(es, type, /** @type {MessageEvent} */ (event)));
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, 5000);
      es.addEventListener("open", done, { once: true });
      es.addEventListener("error", () => {
        if (es.readyState === 2) done();
        if (this.events !== es || es.readyState !== 2) return; // CONNECTING: the browser retries by itself
        this._owner.error({ code: "events_failed", message: `The event stream ${this.eventsUrl} failed; retrying.` });
        // The stream failed for good (e.g. 404 for a session the bridge forgot). If our socket is
        // still welcomed, open a fresh stream (the bridge then replays the calls still waiting).
        this._eventsRetry = setTimeout(() => {
          if (this.events === es && this.ws && this.state === "open") this.openEvents();
        }, 1000);
      });
    });
  }

  /**
   * @param {EventSource} es
   * @param {"agui.tool.invoke" | "agui.tool.cancel"} type
   * @param {MessageEvent} event
   */
  _onEvent(es, type, event) {
    if (this.events !== es) return;
    if (/^\d+$/.test(event.lastEventId)) this.lastEventId = Number(event.lastEventId);
    const message = this._parse(event.data, "bad_event", "an event");
    if (message && typeof message.call_id === "string") this._owner.asked(type, message);
  }

  /**
   * What the bridge sent, parsed; on bad JSON reports `code` and returns undefined.
   * @param {string} text
   * @param {string} code
   * @param {string} what
   * @returns {any}
   */
  _parse(text, code, what) {
    try {
      return JSON.parse(text);
    } catch {
      this._owner.error({ code, message: `The bridge sent ${what} that is not JSON.` });
      return undefined;
    }
  }

  // --- retries --------------------------------------------------------------------------------

  _scheduleRetry() {
    if (this._retryTimer || this._stopped || this.state === "closed") return;
    const { reconnectDelay, maxReconnectDelay } = this.options;
    const base = Math.min(maxReconnectDelay, reconnectDelay * 2 ** this._attempt);
    const jittered = base / 2 + Math.random() * (base / 2); // so many tabs do not come back at once
    const delay = Math.max(jittered, this._notBefore - Date.now());
    this._attempt += 1;
    this._retryTimer = setTimeout(() => {
      this._retryTimer = undefined;
      this._open();
    }, delay);
  }

  /** Back online: try now rather than at the end of a long backoff. */
  retryNow() {
    if (this.state !== "reconnecting" || this.ws || this._suspended || Date.now() < this._notBefore) return;
    this._attempt = 0;
    this._open();
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  _teardown(code, reason) {
    clearTimeout(this._retryTimer);
    clearTimeout(this._eventsRetry);
    this._retryTimer = undefined;
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= 1) {
      try {
        ws.close(code, reason);
      } catch {
        /* already closing */
      }
    }
    if (this.events) this.events.close();
    this.events = null;
  }

  /** @param {ConnectionState} state */
  _setState(state) {
    if (this.state === state) return;
    const previous = this.state;
    this.state = state;
    this._owner.stateChanged(state, previous);
  }

  // --- pagehide and pageshow ------------------------------------------------------------------

  /** @param {PageTransitionEvent} event */
  _pageHidden(event) {
    if (this.state === "closed" || this._stopped) return;
    this._suspended = true;
    if (this.options.leaveOnPageHide) {
      // Leave now, as disconnect() does: the bridge fails our calls at once; a reload is a new page.
      this._teardown(CLOSE_NORMAL, "pagehide");
      this._owner.hidden(true);
      this.sessionId = null;
    } else {
      // A reload (or a navigation, or the tab closing: a page cannot tell which) keeps the session:
      // the next page of this tab takes it (the owner stores it) and resumes it within the bridge's
      // grace period, with the calls still waiting. So close with a code other than 1000, which
      // would make the bridge drop the session at once. Closing ourselves rather than letting the
      // browser drop the socket lets the page enter the back/forward cache (which refuses pages
      // with open WebSockets); the calls of a page that goes there are not stopped, and go on
      // when it is shown again. A page that is really left fails its calls after the grace period.
      this._owner.hidden(false);
      this._teardown(CLOSE_PAGE_HIDDEN, "pagehide");
    }
    if (!event.persisted) this._setState("closed");
  }

  /** @param {PageTransitionEvent} event */
  _pageShown(event) {
    // Back from the back/forward cache: resume the session (a new one after leaveOnPageHide, or
    // past the bridge's grace period) and register our tools again.
    if (!event.persisted || !this._suspended || this._stopped) return;
    this._owner.shown();
    this._suspended = false;
    this._attempt = 0;
    this._setState("reconnecting");
    this._open();
  }
}
