// Types of transport.js: how a page reaches the bridge (its socket, its event stream, retries,
// pagehide). Internal to the client: agui-bridge.js does not export it.

import type { AguiBridgeError } from "./errors.js";
import type { BridgeErrorDetail, ConnectionState } from "./connection.js";

/** A bridge-to-page message (WebSocket frame or event stream event); docs/protocol.md names its fields. */
export type BridgeMessage = Record<string, any>;

export interface TransportOptions {
  /** First reconnection delay in ms; doubles per failed attempt, with jitter. */
  reconnectDelay: number;
  /** Longest reconnection delay in ms. */
  maxReconnectDelay: number;
  /** Ms to wait for the bridge's welcome before trying again. */
  helloTimeout: number;
  /** Failed attempts in a row before the page says it cannot reach the bridge (then each time they double). */
  unreachableAfter: number;
  /** pagehide leaves (close 1000) rather than keeping the session for the next page of the tab (close 4001). */
  leaveOnPageHide: boolean;
  WebSocket: typeof WebSocket;
  EventSource: typeof EventSource;
}

/** What the transport tells the page protocol it carries (connection.js). */
export interface TransportOwner {
  /** The fields of the hello to send on a new socket (the transport sets `type`, `id` and `session_id`). */
  hello(): Record<string, unknown>;
  /**
   * The bridge welcomed the page. `resumed`: the session it had; `lost`: it had one, and the bridge
   * no longer knows it (its calls are failed on the bridge's side).
   */
  welcomed(message: BridgeMessage, resumed: boolean, lost: boolean): void;
  /** A WebSocket frame other than the welcome and a refusal of the hello. */
  received(message: BridgeMessage): void;
  /** An event of the event stream. */
  asked(type: "agui.tool.invoke" | "agui.tool.cancel", message: BridgeMessage): void;
  stateChanged(state: ConnectionState, previous: ConnectionState): void;
  /** An `agui.error` frame about the connection, or a problem of the transport's own (`unreachable` also goes to the
   * console). */
  error(detail: BridgeErrorDetail): void;
  /** Closing for good: `failure` says why when the bridge refused the page, null after `close()` by the page. */
  closing(failure: AguiBridgeError | null): void;
  /** pagehide: `leaving` (leaveOnPageHide) ends the session; otherwise it is kept for the next page of the tab. */
  hidden(leaving: boolean): void;
  /** pageshow from the back/forward cache, before the transport reconnects. */
  shown(): void;
}

/**
 * One page's WebSocket and event stream to the bridge: it says hello (resuming `sessionId` when it
 * has one), keeps the event stream of the session open, and on any loss tries again with backoff
 * (capped, jittered) until the bridge welcomes it or refuses it for a reason retrying cannot fix.
 */
export declare class Transport {
  constructor(url: string, options: TransportOptions, owner: TransportOwner, sessionId: string | null);
  readonly url: string;
  readonly options: TransportOptions;
  readonly state: ConnectionState;
  /** The session the bridge gave the page (or the one to resume). */
  readonly sessionId: string | null;
  /** The event stream's URL, from the last welcome. */
  readonly eventsUrl: string | null;
  /** Why the bridge refused the page, once closed for that. */
  readonly failure: AguiBridgeError | null;
  readonly ws: WebSocket | null;
  readonly events: EventSource | null;
  /** The id of the last event read, sent back when a new stream of the same session opens. */
  lastEventId: number | null;
  /** The socket is open and welcomed: page messages may be sent. */
  readonly ready: boolean;

  nextId(): number;
  start(): void;
  /** Send one message on the socket; false when there is no open socket (or sending failed). */
  send(message: Record<string, unknown>, ws?: WebSocket | null): boolean;
  /** Open a new event stream for the session, resolving once it is open (or could not open). */
  openEvents(): Promise<void>;
  retryNow(): void;
  close(code: number, reason: string, failure?: AguiBridgeError | null): void;
}

export declare const CLOSE_NORMAL: number;
