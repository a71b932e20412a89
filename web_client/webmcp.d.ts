// Types of webmcp.js: the W3C WebMCP adapter.

import type { AguiBridge, ToolCallContext } from "./connection.js";

/**
 * A tool as a WebMCP runtime lists it (`getTools()`): no `execute`, and `inputSchema` may be JSON text
 * (Chrome before 155). `title` and `annotations` (`readOnlyHint`, `untrustedContentHint`…) reach the
 * bridge as they are.
 */
export interface RegisteredWebMCPTool {
  name: string;
  description?: string;
  title?: string;
  inputSchema?: Record<string, unknown> | string;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** A WebMCP tool, as given to `document.modelContext.registerTool()`. */
export interface WebMCPTool extends RegisteredWebMCPTool {
  execute(input: any, client?: WebMCPClient): unknown | Promise<unknown>;
}

/**
 * The second argument the bridge passes to a WebMCP tool's `execute` (the draft's `{signal}`, with the
 * bridge's call id and progress beside it).
 */
export interface WebMCPClient {
  /** Aborted when the agent cancels the call (or it times out). */
  signal: AbortSignal;
  callId: string;
  progress: ToolCallContext["progress"];
}

/** The part of `document.modelContext` the adapter uses (the W3C WebMCP API, native or polyfilled). */
export interface ModelContextLike {
  registerTool(tool: WebMCPTool, options?: { signal?: AbortSignal }): unknown;
  /** Older MCP-B API; wrapped when present. */
  unregisterTool?(name: string): unknown;
  getTools?(): Promise<RegisteredWebMCPTool[] | null | undefined>;
  /** Older MCP-B name of `getTools()`. */
  listTools?(): RegisteredWebMCPTool[] | null | undefined | Promise<RegisteredWebMCPTool[] | null | undefined>;
  /**
   * Runs a listed tool (Chrome's; the adapter runs tools registered before it this way). Its input is an
   * object from Chrome 155 on, JSON text before it and in the polyfill: the adapter tries the object
   * first and keeps to the shape the runtime takes. Resolves with the result as JSON text.
   */
  executeTool?(tool: RegisteredWebMCPTool, input: Record<string, unknown> | string,
    options?: { signal?: AbortSignal }): Promise<string | null>;
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
 * (run through `executeTool()` when the runtime has it). A runtime's tool for a `<form toolname>` is
 * left to `serveForms()` while it serves the page's forms on this bridge (`connect()` does by default).
 * Throws TypeError without a `document.modelContext`.
 */
export declare function bridgeWebMCP(bridge: AguiBridge, options?: BridgeWebMCPOptions): WebMCPBridgeHandle;
