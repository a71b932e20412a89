// Types of react.js: React hooks for agui-mcp-bridge (`agui-mcp-bridge/react`). React 18 or later.

import type { ReactElement, ReactNode } from "react";
import type { AguiBridge, ConnectOptions, ToolCallContext, ToolDefinition, ToolResult } from "./connection.js";
import type { UserToolsOptions } from "./dialogs.js";
import type { AguiBridgeError } from "./errors.js";

/**
 * Where the connection stands: `connecting` (the first try, and while the bridge is not up yet),
 * `connected`, `reconnecting` (after a drop; the tools are registered again once back), `refused`
 * (the bridge refused the page for a reason retrying cannot fix: a wrong token, a forbidden origin…;
 * `onError` says which), `closed` (the provider was unmounted).
 */
export type BridgeStatus = "connecting" | "connected" | "reconnecting" | "refused" | "closed";

export interface BridgeProviderProps {
  /** The bridge's base URL, with its mount prefix (`http://127.0.0.1:8765/`, `https://app.example/bridge/`). */
  url: string | URL;
  /** Default "default"; 1–64 of `A-Z a-z 0-9 _ -`. */
  room?: string;
  /** The page token, for a bridge started with `--token` (or `--room-tokens`). */
  token?: string | null;
  /** Other options of the connection; read when it connects (a change does not reconnect). */
  options?: Omit<ConnectOptions, "url" | "room" | "token">;
  /**
   * Serve the page's `<form toolname>`s as tools once connected, as `connect()` does (`serveForms()`);
   * default true. `false` stops serving them (their tools are unregistered).
   */
  forms?: boolean;
  /**
   * Told of each problem: the refusal that ends the connection (status `refused`), and while it lives
   * the bridge's `agui.error`s and the client's own (`unreachable` after a few failed attempts, then rarely, …).
   */
  onError?: (error: AguiBridgeError) => void;
  children?: ReactNode;
}

/**
 * One connection to the bridge for the components inside it: connects when mounted, reconnects as the
 * plain client does (`connect()`), and leaves (the bridge drops its tools at once) when unmounted or
 * when `url`, `room` or `token` change (then it connects anew).
 */
export declare function BridgeProvider(props: BridgeProviderProps): ReactElement;

/** The provider's connection; `null` until the provider has connected it (its first effect). */
export declare function useBridge(): AguiBridge | null;

/** The provider's connection status; re-renders when it changes. */
export declare function useBridgeStatus(): BridgeStatus;

/** A tool for `useBridgeTool`: its definition and the function that runs it. */
export interface BridgeTool<P = Record<string, any>> extends ToolDefinition {
  /**
   * Runs a call (may be async). The newest `handler` given is the one called, so it sees the state
   * of the latest render. Its result and errors are those of `AguiBridge.registerTool`'s handler.
   */
  handler(args: P, context: ToolCallContext): ToolResult | Promise<ToolResult>;
}

export interface BridgeToolRegistration {
  /** The MCP name agents see, once the bridge has registered the tool; else `null`. */
  mcpName: string | null;
  /** Why the bridge refused the tool (an `AguiBridgeError` `invalid_tool`, …); else `null`. */
  error: Error | null;
}

/**
 * Register a tool while the component is mounted (unregistered when it unmounts). The definition is
 * compared by value: a change of it registers the tool again; a new `handler` does not.
 */
export declare function useBridgeTool<P = Record<string, any>>(tool: BridgeTool<P>): BridgeToolRegistration;

/**
 * Register the built-in user tools (`agui_user_confirm`, `agui_user_prompt`, `agui_user_choose`: modal
 * dialogs) while the component is mounted; their MCP names by kind once registered, else `null`.
 */
export declare function useUserTools(options?: Omit<UserToolsOptions, "signal">):
  { confirm?: string; prompt?: string; choose?: string } | null;
