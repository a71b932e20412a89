// Types of connection.js: a page's connection to the bridge (docs/protocol.md is the wire contract).

/** JSON values a tool may take or return. */
export type JSONValue = string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };

/** A JSON Schema (2020-12) with `"type": "object"` at its root, as the bridge requires. */
export interface ObjectSchema {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  [keyword: string]: unknown;
}

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  /**
   * WebMCP's: the tool's output may hold text someone other than the page's author wrote (reviews, mail,
   * comments). Agents get it in the listed tool's `_meta` (`agui-mcp-bridge/untrustedContentHint`); a
   * bridge started with `--mark-page-text` marks such results' text as untrusted.
   */
  untrustedContentHint?: boolean;
  [hint: string]: unknown;
}

/** A tool as the page registers it. */
export interface ToolDefinition {
  /** 1–128 characters; the bridge derives an MCP-safe name from it (see `registerTool`'s result). */
  name: string;
  description?: string;
  /** Default `{type: "object", properties: {}}`. */
  inputSchema?: ObjectSchema;
  outputSchema?: ObjectSchema;
  title?: string;
  annotations?: ToolAnnotations;
  /** Listed to agents even when the room defers most tools behind `tool_search` (keep it for the few that must be seen). */
  pinned?: boolean;
  /** Up to 5 argument objects showing how to call the tool; each must match `inputSchema`. */
  inputExamples?: Array<Record<string, JSONValue>>;
  /**
   * Whether an agent may run a call as an MCP task that outlives its request (a dialog a person
   * may leave open for minutes): "optional" or "required". Default "forbidden".
   */
  execution?: { taskSupport?: "forbidden" | "optional" | "required" };
  /** A task-capable tool that asks the agent for input first (`ctx.askAgent`): the call becomes a task once answered. */
  inputBeforeTask?: boolean;
}

/** An MCP CallToolResult a handler may return as is (anything with a `content` array). */
export interface CallToolResult {
  content: Array<Record<string, unknown>>;
  structuredContent?: JSONValue;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/**
 * What a handler may return:
 * - a string → one text content;
 * - an object with a `content` array → that MCP result;
 * - any other JSON value → `structuredContent` plus its JSON as text;
 * - `undefined` → `null`.
 * A thrown value (an Error or anything else) becomes an error answer (`isError` for the agent).
 */
export type ToolResult = string | CallToolResult | JSONValue | undefined | void;

export interface ToolCallContext {
  /** Aborted when the agent cancels the call, it times out, or the page loses its session. */
  signal: AbortSignal;
  /** The bridge-wide unique call id. */
  callId: string;
  /** The name the page registered. */
  tool: string;
  /** The MCP name the agent used. */
  name: string;
  /**
   * Report progress (sent to agents that asked for it). Returns false when it could not be sent
   * (the call ended, or the page is reconnecting). Throws TypeError when `progress` is not a finite number.
   */
  progress(progress: number, total?: number | null, message?: string | null): boolean;
  /**
   * A log line about this call, sent to agents that asked for log messages at `level` or below
   * (MCP `notifications/message`). Returns false when it could not be sent.
   */
  log(level: LogLevel, data: JSONValue, logger?: string): boolean;
  /**
   * Ask the agent's side for input (a user's answer, a sampled completion, the client's roots).
   * Resolves with the answers by key when this invocation carries them all (`inputResponses`);
   * otherwise this run of the handler ends — its `signal` aborts and the promise never settles —
   * and the bridge invokes the tool again, with the same arguments, once the agent has answered;
   * `state` comes back as `requestState`. Only answers to a request this page made, to the keys it
   * asked, count (once): answers an agent sends unasked never resolve it. Ask only for capabilities
   * `clientCapabilities` declares: otherwise the call ends with an error for the agent.
   */
  askAgent(requests: Record<string, InputRequest>, state?: JSONValue): Promise<Record<string, any>>;
  /** What the agent's MCP client declared it can do (`elicitation`, `sampling`, `roots`…). */
  clientCapabilities: Record<string, unknown>;
  /** The agent's answers to what an earlier run of this call asked, by key (only the keys it asked). */
  inputResponses: Record<string, any>;
  /** The `state` an earlier run of this call gave `askAgent`. */
  requestState: JSONValue | undefined;
}

export type LogLevel = "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency";

/** One input request, as MCP's server-to-client requests are written. */
export interface InputRequest {
  method: "elicitation/create" | "sampling/createMessage" | "roots/list";
  params?: Record<string, unknown>;
}

export type ToolHandler<P = Record<string, any>> = (params: P, context: ToolCallContext) => ToolResult | Promise<ToolResult>;

export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

export interface ConnectOptions {
  /**
   * The bridge's base URL: where it is served, with its mount prefix (e.g. `https://app.example/bridge/`).
   * Default: where this module was loaded from (`<bridge>/client/…`), one level up.
   */
  url?: string | URL;
  /** Default "default"; 1–64 of `A-Z a-z 0-9 _ -`. */
  room?: string;
  /**
   * The page token, needed when the bridge runs with `--token` (or `--room-tokens` for this room):
   * the value the bridge was started with. Sent in `agui.hello`, never in a URL. A wrong or missing
   * token rejects `start()`/`connect()` with an AguiBridgeError `unauthorized`, and is never retried.
   */
  token?: string | null;
  /** How the page presents itself; default `{url: location.href, title: document.title}`. */
  page?: { url?: string | null; title?: string | null } | null;
  /**
   * First reconnection delay in ms (default 250); doubles per failed attempt, with jitter (each delay
   * is between half and all of it). The first connection is retried as any other: a page may be
   * open before the bridge starts.
   */
  reconnectDelay?: number;
  /** Longest reconnection delay in ms (default 10000). */
  maxReconnectDelay?: number;
  /** Ms to wait for the bridge's welcome before trying again (default 10000). */
  helloTimeout?: number;
  /**
   * Failed attempts in a row (nothing answering at `url`) before the page says it cannot reach the bridge
   * (default 3, about a second): a `console.warn` naming the URL and what to check, and an `error` event
   * (`UnreachableDetail`). Said again each time the count doubles (6, 12, 24…: rarely, however long it
   * waits); once connected, a `console.info` says after how many. `connect()` keeps waiting all along.
   */
  unreachableAfter?: number;
  /**
   * After a reload resumed the session, ms the page has to register its tools again (default 5000).
   * Calls for the previous page's tools wait for their handler that long; then the tools the page
   * did not register again are unregistered and the calls for them fail.
   */
  reregisterTimeout?: number;
  /**
   * What `pagehide` (a reload, a navigation, the tab closing) does.
   * - false (default): the session is kept for the next page of the tab (the socket closes with 4001,
   *   the session id goes to sessionStorage): a reload within the bridge's grace period resumes it,
   *   and the calls still waiting are made again to the reloaded page. A page that is really left
   *   fails its calls when the grace period ends.
   * - true: leave as `disconnect()` does (code 1000): the bridge fails the page's calls at once, and a
   *   reloaded page is a new page.
   * Either way a page restored from the back/forward cache reconnects.
   */
  leaveOnPageHide?: boolean;
  /** Implementations to use (default: the browser's). */
  WebSocket?: typeof WebSocket;
  EventSource?: typeof EventSource;
}

export interface RegisterOptions {
  /** Abort to unregister the tool (an `agui.tools.unregister` is sent). */
  signal?: AbortSignal;
}

export interface RegisteredTool {
  name: string;
  mcpName: string | null;
  definition: ToolDefinition;
}

export interface ActiveCall {
  callId: string;
  tool: string;
  params: Record<string, unknown>;
  startedAt: number;
}

/**
 * An `agui.error` frame from the bridge, or a client-side problem (`unreachable`: see `UnreachableDetail`;
 * `bad_frame`, `bad_event`, `events_failed`, `send_failed`, `replaced`, `webmcp`).
 */
export interface BridgeErrorDetail {
  code: string;
  message: string;
  call_id?: string;
  tool?: string;
  reply_to?: string | number;
  [field: string]: unknown;
}

/**
 * The `error` event of a page that cannot reach the bridge, while it keeps trying: after
 * `unreachableAfter` failed attempts in a row, then each time their count doubles. The same text goes
 * to the console (`console.warn`, prefixed `agui-bridge:`).
 */
export interface UnreachableDetail extends BridgeErrorDetail {
  code: "unreachable";
  /** Says which URL, how many attempts, and `hint`. */
  message: string;
  /** The bridge's base URL the page was given (`ConnectOptions.url`, ending with "/"). */
  url: string;
  /** The WebSocket URL it tries (`<url>agui/ws`, `ws:` or `wss:`). */
  webSocketUrl: string;
  /** Failed attempts in a row so far. */
  attempts: number;
  /** When the first of them failed (ms since the epoch, as `Date.now()`). */
  since: number;
  /** What to check: is the bridge running, on this host and port, and is `url` where it listens. */
  hint: string;
}

export interface AguiBridgeEventMap {
  statechange: CustomEvent<{ state: ConnectionState; previous: ConnectionState }>;
  error: CustomEvent<BridgeErrorDetail>;
  session: CustomEvent<{ session_id: string; room: string; resumed: boolean }>;
  registered: CustomEvent<{ tools: Array<{ tool: string; name: string }> }>;
  invoke: CustomEvent<{ callId: string; tool: string; name: string; params: Record<string, unknown>; mcpRequestId: unknown }>;
  result: CustomEvent<{ callId: string; tool: string; result?: ToolResult; error?: string; ms: number }>;
  cancel: CustomEvent<{ callId: string; tool: string; reason: string }>;
  progress: CustomEvent<{ callId: string; progress: number; total?: number; message?: string }>;
}

/** The connection states, in the order a healthy connection goes through them. */
export declare const STATES: readonly ConnectionState[];

/** One page's connection to the bridge. */
export declare class AguiBridge extends EventTarget {
  constructor(options?: ConnectOptions);
  /** The bridge's base URL, ending with "/" (e.g. `http://127.0.0.1:8765/`). */
  readonly url: string;
  readonly room: string;
  readonly state: ConnectionState;
  /**
   * The session the bridge gave this page. Kept for the tab across a reload (see
   * `ConnectOptions.leaveOnPageHide`); `null` before the first welcome.
   */
  readonly sessionId: string | null;
  /** The event stream's URL (the welcome's `events_url`, resolved against the bridge's origin). */
  readonly eventsUrl: string | null;
  readonly connected: boolean;
  readonly tools: RegisteredTool[];
  readonly activeCalls: ActiveCall[];
  /**
   * Calls the bridge sent for tools this page has not registered (yet): a reloaded page's calls wait
   * here until it registers their tools again (`reregisterTimeout`). `startedAt` is NaN: they have not started.
   */
  readonly heldCalls: ActiveCall[];

  /**
   * Connect; resolves once welcomed with the event stream open, however long the bridge takes to be
   * reachable (the state goes `connecting` → `reconnecting` meanwhile, trying again with backoff).
   * Rejects with an AguiBridgeError when the bridge refuses the page for a reason retrying cannot
   * fix (`code`: `forbidden_origin`, `unauthorized`, `too_many_attempts`, `bad_room`, `bad_message`;
   * `detail` is the bridge's `agui.error`, with `retry_after` for `too_many_attempts`), or with
   * `closed` when `disconnect()` is called first (the way to give up waiting).
   * Tools may be registered before: they are sent once the bridge welcomes the page.
   */
  start(): Promise<AguiBridge>;

  /**
   * Register (or replace) a tool; resolves to the MCP name the bridge gave it. Rejects with an
   * AguiBridgeError (`invalid_tool`) when the bridge refuses the definition, with an AbortError when
   * `signal` aborts first, with a TypeError for a definition without a valid name, and with the
   * refusal `start()` rejects with (or `closed` after `disconnect()`) when the page never gets in.
   * May be called before `start()`. Tools are registered again, automatically, after every reconnection.
   */
  registerTool<P = Record<string, any>>(definition: ToolDefinition, handler: ToolHandler<P>, options?: RegisterOptions): Promise<string>;

  /** Unregister tools by the names the page gave them (same as aborting their signals). */
  unregisterTool(...names: Array<string | string[]>): void;

  /**
   * Leave now (WebSocket close code 1000): the bridge drops the page, its tools and its calls, and
   * nothing is kept for the tab (a reload after it is a new page).
   */
  disconnect(): void;

  addEventListener<K extends keyof AguiBridgeEventMap>(type: K, listener: (event: AguiBridgeEventMap[K]) => void,
    options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof AguiBridgeEventMap>(type: K, listener: (event: AguiBridgeEventMap[K]) => void,
    options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions): void;
}

/**
 * Connect a page to the bridge (`new AguiBridge(options).start()`): resolves once connected, waiting
 * for a bridge that is not up yet; rejects only on a refusal retrying cannot fix (see `start()`).
 * To show the state while it waits, use `new AguiBridge(options)`, listen to `statechange`, then `start()`.
 */
export declare function connect(options?: ConnectOptions): Promise<AguiBridge>;
