// Types of agui-app.js: serve an AG-UI app's frontend tools to MCP agents through agui-mcp-bridge
// (docs/agui.md is the contract). Structural types only, so it needs no @ag-ui/client types: an
// `HttpAgent` (or any `AbstractAgent`) of @ag-ui/client 1.x is an `AgentLike`.

/** The bridge's key in a tool's `metadata` and in `forwardedProps`. */
export declare const BRIDGE_KEY: "agui-mcp-bridge";

/**
 * What a handler returns when the user declines: for a tool marked `interrupt`, the interrupt is
 * answered `{status: "cancelled"}` (the agent reads "The user declined to answer."); for any other
 * tool, the ToolMessage carries the error "The user declined.".
 */
export declare const DECLINE: symbol;

/** An AG-UI content part (`text`, or `image` / `audio` / `video` / `document` with a `source`). */
export interface ContentPartLike {
  type: "text" | "image" | "audio" | "video" | "document";
  [field: string]: unknown;
}

/** A handler's result sent as AG-UI content parts rather than text; made by `toolContent()`. */
export type ToolContent = { readonly [key: symbol]: ContentPartLike[] };

/** Wrap content parts (e.g. an image) as a handler's result. */
export declare function toolContent(parts: ContentPartLike[]): ToolContent;

/** An AG-UI 1.0 interrupt, as RUN_FINISHED's `outcome.interrupts` carries it. */
export interface InterruptLike {
  id: string;
  reason: string;
  message?: string;
  toolCallId?: string;
  responseSchema?: Record<string, any>;
}

/** The second argument of a handler. */
export interface FrontendToolContext {
  /** Aborted when the call is cancelled (by the agent, or a timeout) or `serveFrontendTools` stops. */
  signal: AbortSignal;
  toolCallId: string;
  /** For a tool marked `interrupt`: the interrupt asking the user (reason "tool_call", message, responseSchema). */
  interrupt?: InterruptLike;
}

/** A frontend tool: its AG-UI definition and the function that runs it. */
export interface FrontendTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments, `"type": "object"` at the root (default: no arguments). */
  parameters?: Record<string, unknown>;
  /**
   * The user answers this tool through an AG-UI interrupt: the run ends with `outcome.type: "interrupt"`,
   * and the handler's result goes back as the resume entry's `payload` (`DECLINE`: status "cancelled").
   */
  interrupt?: boolean | { message?: string; responseSchema?: Record<string, unknown> };
  /** Passed to agents as the MCP tool's title and annotations. */
  title?: string;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean;
                  openWorldHint?: boolean };
  /**
   * Runs the tool. Its result: a string (sent as is), `toolContent([...])`, `DECLINE`, or any other JSON
   * value (sent as its JSON text). A throw is sent as the ToolMessage's `error` (the agent gets `isError`).
   */
  handler(args: any, context: FrontendToolContext): unknown;
}

/** The parameters `serveFrontendTools` passes to `runAgent`. */
export interface RunParameters {
  tools: Array<{ name: string; description: string; parameters: Record<string, unknown>; metadata?: Record<string, unknown> }>;
  forwardedProps: Record<string, unknown>;
  resume?: Array<{ interruptId: string; status: "resolved" | "cancelled"; payload?: unknown }>;
}

/** The subscriber `serveFrontendTools` passes to `runAgent` (a part of @ag-ui/client's AgentSubscriber). */
export interface RunSubscriber {
  onRunStartedEvent(params: any): void;
  onToolCallEndEvent(params: { event: { toolCallId: string }; toolCallName: string; toolCallArgs: Record<string, any> }): void;
  onCustomEvent(params: { event: { name: string; value: any } }): void;
  onRunFinishedEvent(params: { outcome: "success" | "interrupt" | "cancelled"; interrupts?: InterruptLike[] } | any): void;
  onRunErrorEvent(params: { event: { message: string; code?: string } }): void;
  onRunFailed(params: { error: Error }): void;
}

/** What `serveFrontendTools` uses of an @ag-ui/client agent. */
export interface AgentLike {
  runAgent(parameters: RunParameters, subscriber: RunSubscriber): Promise<unknown>;
  setMessages(messages: any[]): void;
  pendingInterrupts: InterruptLike[];
  abortRun(): void;
  detachActiveRun?(): Promise<void>;
}

export interface ServeOptions {
  /** Stops serving: the open run is aborted, handlers at work are aborted, the promise resolves. */
  signal?: AbortSignal;
  /** How agents and the bridge's dashboard name this app (forwardedProps["agui-mcp-bridge"].title). */
  title?: string;
  /** The tools are registered, under these MCP names (a name another page has already gets a suffix). */
  onRegistered?(tools: Array<{ tool: string; name: string }>): void;
  /** A run failed in a way worth retrying (network, bridge restart); the loop retries after a pause. */
  onError?(error: unknown): void;
  /** Milliseconds before the first retry (default 250), doubled up to 5 s. */
  retryDelay?: number;
}

/**
 * Serve `tools` to MCP agents until `options.signal` aborts: keeps a run of `agent` open against the
 * bridge, runs each call it receives with the tool's handler, and sends the results back. Resolves
 * when stopped; rejects with an AguiBridgeError when the bridge refuses (HTTP 4xx: `code` is the
 * bridge's, e.g. `forbidden_origin`, `unauthorized`, `invalid_input`) or a run fails in a way retrying
 * cannot mend (`invalid_tool`, `superseded`: another client runs this thread).
 */
export declare function serveFrontendTools(agent: AgentLike, tools: FrontendTool[], options?: ServeOptions): Promise<void>;
