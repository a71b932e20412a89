// Types of webmcp.js: the W3C WebMCP adapter.

import type { AguiBridge, ToolCallContext } from "./connection.js";

/** A tool as a WebMCP runtime lists it (`getTools()`): no `execute`, and `inputSchema` may be JSON text. */
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
  getTools?(): Promise<RegisteredWebMCPTool[] | null | undefined>;
  /** Older MCP-B name of `getTools()`. */
  listTools?(): RegisteredWebMCPTool[] | null | undefined | Promise<RegisteredWebMCPTool[] | null | undefined>;
  /** Chromium's optional extension: runs tools registered before the adapter. */
  executeTool?(tool: RegisteredWebMCPTool, inputJson: string, options?: { signal?: AbortSignal }): Promise<string | null>;
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
