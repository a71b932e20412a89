// Types of agui-bridge.js, the browser client of agui-mcp-bridge (docs/protocol.md is the wire contract).

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
}

export type ToolHandler<P = Record<string, any>> = (params: P, context: ToolCallContext) => ToolResult | Promise<ToolResult>;

export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

export interface ConnectOptions {
  /** The bridge's base URL; default: the origin this module was loaded from. */
  url?: string;
  /** Default "default"; 1–64 of `A-Z a-z 0-9 _ -`. */
  room?: string;
  /** Needed when the bridge runs with `--token`. */
  token?: string | null;
  /** How the page presents itself; default `{url: location.href, title: document.title}`. */
  page?: { url?: string | null; title?: string | null } | null;
  /** First reconnection delay in ms (default 250); doubles per failed attempt, with jitter. */
  reconnectDelay?: number;
  /** Longest reconnection delay in ms (default 10000). */
  maxReconnectDelay?: number;
  /** Ms to wait for the bridge's welcome before trying again (default 10000). */
  helloTimeout?: number;
  /**
   * Close with code 1000 on `pagehide` (default true), so that a reload or navigation fails the page's
   * calls at once instead of after the bridge's grace period. A page restored from the back/forward
   * cache reconnects as a new page.
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

/** An `agui.error` frame from the bridge, or a client-side problem (`bad_frame`, `bad_event`, `events_failed`, `send_failed`, `webmcp`). */
export interface BridgeErrorDetail {
  code: string;
  message: string;
  call_id?: string;
  tool?: string;
  reply_to?: string | number;
  [field: string]: unknown;
}

export interface AguiBridgeEventMap {
  statechange: CustomEvent<{ state: ConnectionState; previous: ConnectionState }>;
  error: CustomEvent<BridgeErrorDetail>;
  session: CustomEvent<{ session_id: string; room: string; resumed: boolean }>;
  registered: CustomEvent<{ tools: Array<{ tool: string; name: string }> }>;
  invoke: CustomEvent<{ callId: string; tool: string; name: string; params: Record<string, unknown>; mcpRequestId: unknown }>;
  result: CustomEvent<{ callId: string; tool: string; result?: JSONValue; error?: string; ms: number }>;
  cancel: CustomEvent<{ callId: string; tool: string; reason: string }>;
  progress: CustomEvent<{ callId: string; progress: number; total?: number; message?: string }>;
}

/** The connection states, in the order a healthy connection goes through them. */
export declare const STATES: readonly ConnectionState[];

/** An Error carrying the bridge's `agui.error` code (`unauthorized`, `invalid_tool`, `closed`, `unreachable`, …). */
export declare class AguiBridgeError extends Error {
  constructor(message: string, options?: { code?: string; detail?: unknown });
  code: string;
  detail: unknown;
}

/** One page's connection to the bridge. */
export declare class AguiBridge extends EventTarget {
  constructor(options?: ConnectOptions);
  readonly url: string;
  readonly room: string;
  readonly state: ConnectionState;
  /** Kept in memory only: a reloaded page is a new page. */
  readonly sessionId: string | null;
  readonly eventsUrl: string | null;
  readonly connected: boolean;
  readonly tools: RegisteredTool[];
  readonly activeCalls: ActiveCall[];

  /** Connect; resolves once welcomed with the event stream open. Rejects when the first attempt fails. */
  start(): Promise<AguiBridge>;

  /**
   * Register (or replace) a tool; resolves to the MCP name the bridge gave it. Rejects with an
   * AguiBridgeError (`invalid_tool`) when the bridge refuses the definition, with an AbortError when
   * `signal` aborts first, and with a TypeError for a definition without a valid name.
   * Tools are registered again, automatically, after every reconnection.
   */
  registerTool<P = Record<string, any>>(definition: ToolDefinition, handler: ToolHandler<P>, options?: RegisterOptions): Promise<string>;

  /** Unregister tools by the names the page gave them (same as aborting their signals). */
  unregisterTool(...names: Array<string | string[]>): void;

  /** Leave now (WebSocket close code 1000): the bridge drops the page, its tools and its calls. */
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

/** Connect a page to the bridge (`new AguiBridge(options).start()`). */
export declare function connect(options?: ConnectOptions): Promise<AguiBridge>;

/** A readable message for anything a handler may throw. */
export declare function errorMessage(thrown: unknown): string;

// --- dialogs and user tools ------------------------------------------------------------------

export interface DialogOptions {
  /** Cancels the dialog (it closes and the promise rejects with an AbortError). */
  signal?: AbortSignal;
}

export interface ConfirmDialogParams {
  title: string;
  body?: string;
  /** Default "OK". */
  ok_text?: string;
  /** Default "Cancel". */
  cancel_text?: string;
  /** The small line above the title; default "An AI agent asks you". */
  origin?: string;
}

export interface PromptDialogParams {
  title: string;
  body?: string;
  placeholder?: string;
  default?: string;
  ok_text?: string;
  cancel_text?: string;
  /** The text field's label (default "Your answer"). */
  label?: string;
  /** A textarea instead of a one-line field. */
  multiline?: boolean;
  origin?: string;
}

export interface ChooseDialogParams {
  title: string;
  body?: string;
  options: string[];
  cancel_text?: string;
  origin?: string;
}

/**
 * Modal confirm dialog (role="dialog", aria-modal, labelled by its title, described by its body; focus on
 * Cancel, restored afterwards; Escape cancels). Dialogs queue: one shows at a time.
 */
export declare function confirmDialog(params: ConfirmDialogParams, options?: DialogOptions): Promise<"ok" | "cancel">;

/** Modal text prompt: resolves to the text (possibly ""); rejects with UserCancelledError on cancel. */
export declare function promptDialog(params: PromptDialogParams, options?: DialogOptions): Promise<string>;

/** Modal choice, one button per option: resolves to the chosen option; rejects with UserCancelledError on cancel. */
export declare function chooseDialog(params: ChooseDialogParams, options?: DialogOptions): Promise<string>;

/** What promptDialog and chooseDialog reject with when the user cancels. */
export declare class UserCancelledError extends Error {
  constructor(message?: string);
}

export interface UserToolDefinitions {
  confirm: Required<Pick<ToolDefinition, "name" | "title" | "description" | "inputSchema" | "annotations">>;
  prompt: Required<Pick<ToolDefinition, "name" | "title" | "description" | "inputSchema" | "annotations">>;
  choose: Required<Pick<ToolDefinition, "name" | "title" | "description" | "inputSchema" | "annotations">>;
}

/** The built-in user tools: `agui_user_confirm`, `agui_user_prompt`, `agui_user_choose`. */
export declare const USER_TOOLS: Readonly<UserToolDefinitions>;

export interface UserToolsOptions {
  /** `agui_user_confirm` → "ok" | "cancel" (default true). */
  confirm?: boolean;
  /** `agui_user_prompt` → the text; cancelling is an error result (default true). */
  prompt?: boolean;
  /** `agui_user_choose` → the chosen option; cancelling is an error result (default true). */
  choose?: boolean;
  /** Abort to unregister them. */
  signal?: AbortSignal;
  /** The line shown above each dialog's title. */
  origin?: string;
}

/** Register the built-in user tools; resolves to their MCP names by kind. */
export declare function registerUserTools(bridge: AguiBridge, options?: UserToolsOptions):
  Promise<{ confirm?: string; prompt?: string; choose?: string }>;

// --- WebMCP ----------------------------------------------------------------------------------

/** A WebMCP tool, as given to `document.modelContext.registerTool()`. */
export interface WebMCPTool {
  name: string;
  description?: string;
  title?: string;
  inputSchema?: Record<string, unknown> | string;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  execute(input: any, client?: WebMCPClient): unknown | Promise<unknown>;
}

/** The second argument the bridge passes to a WebMCP tool's `execute`. */
export interface WebMCPClient {
  /** Aborted when the agent cancels the call. */
  signal: AbortSignal;
  callId: string;
  progress: ToolCallContext["progress"];
  /** WebMCP's ModelContextClient method: runs the callback (the user is already on the page). */
  requestUserInteraction<T>(callback: () => T | Promise<T>): Promise<T>;
}

/** The part of `document.modelContext` the adapter uses (the W3C WebMCP API, native or polyfilled). */
export interface ModelContextLike {
  registerTool(tool: WebMCPTool, options?: { signal?: AbortSignal }): unknown;
  /** Older MCP-B API; wrapped when present. */
  unregisterTool?(name: string): unknown;
  getTools?(): Promise<Array<{ name: string; description?: string; title?: string; inputSchema?: unknown; annotations?: unknown }>>;
  listTools?(): unknown;
  /** Chromium's optional extension: runs tools registered before the adapter. */
  executeTool?(tool: { name: string }, inputJson: string, options?: { signal?: AbortSignal }): Promise<string | null>;
  addEventListener?(type: "toolchange", listener: () => void): void;
  removeEventListener?(type: "toolchange", listener: () => void): void;
}

export interface BridgeWebMCPOptions {
  /** Default `document.modelContext`. */
  modelContext?: ModelContextLike;
  /** Abort to stop bridging (same as `dispose()`). */
  signal?: AbortSignal;
}

export interface WebMCPBridgeHandle {
  /** Resolves once the tools registered before the adapter are mirrored. */
  ready: Promise<void>;
  /** Names of the tools mirrored now. */
  readonly tools: string[];
  /** Restore `registerTool`/`unregisterTool` and unregister the mirrored tools from the bridge. */
  dispose(): void;
}

/**
 * Serve the page's WebMCP tools through the bridge: wraps `modelContext.registerTool` (honouring the
 * registration `signal`) and `unregisterTool`, and mirrors tools registered earlier via `getTools()`
 * (run through `executeTool()` when the runtime has it). Throws TypeError without a `document.modelContext`.
 */
export declare function bridgeWebMCP(bridge: AguiBridge, options?: BridgeWebMCPOptions): WebMCPBridgeHandle;
