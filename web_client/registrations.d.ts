// Types of registrations.js: the tools a page registered and the messages that tell the bridge.
// Internal to the client: agui-bridge.js does not export it.

import type { ObjectSchema, RegisteredTool, ToolDefinition, ToolHandler } from "./connection.js";
import type { BridgeMessage } from "./transport.js";

export type { BridgeMessage };

/** A definition as sent to the bridge: the defaults filled in. */
export type WireToolDefinition = ToolDefinition & { description: string; inputSchema: ObjectSchema };

/** A tool this page registered. */
export interface Registration {
  /** The page's name for it. */
  name: string;
  definition: WireToolDefinition;
  handler: ToolHandler<any>;
  /** The name agents see, once the bridge said it. */
  mcpName: string | null;
  /** The bridge has (or is being sent) a definition under this name. */
  sent: boolean;
  /** The bridge has the definition this one replaces. */
  replaces: boolean;
  /** Resolves to `mcpName`. */
  promise: Promise<string>;
  resolve: (name: string) => void;
  reject: (error: unknown) => void;
  /** Stops listening to the registration's signal. */
  detach: (() => void) | null;
}

/** A register or unregister message waiting for the bridge's reply. */
export type PendingRequest =
  | { kind: "register"; names: string[]; waiting: string[]; registrations: Registration[] }
  | { kind: "unregister"; names: string[] };

/** What the registrations need of the connection. */
export interface RegistrationsLink {
  /** The page may send: its socket is open and welcomed. */
  ready(): boolean;
  nextId(): number;
  send(message: Record<string, unknown>): boolean;
  /** A tool was registered (or replaced) under `name`. */
  added(name: string): void;
}

export declare class Registrations {
  constructor(link: RegistrationsLink);
  get(name: string): Registration | undefined;
  readonly names: string[];
  list(): RegisteredTool[];
  /** Register (or replace) a tool; resolves to its MCP name. Sent with the others of the same task. */
  add(definition: ToolDefinition, handler: ToolHandler<any>, signal?: AbortSignal): Promise<string>;
  remove(name: string, reason: unknown): void;
  /** Unregister names the bridge has that no handler of this page serves (a previous page's). */
  unregister(names: Iterable<string>): void;
  /** After a welcome: send every registration again. */
  welcomed(resumed: boolean): void;
  /** The connection closed for good: every registration still waiting rejects with `error`. */
  close(error: unknown): void;
  /** An `agui.tools.registered`: the MCP names given, as the pairs it named. */
  registered(message: BridgeMessage): Array<{ tool: string; name: string }>;
  unregistered(message: BridgeMessage): void;
  /** An `agui.error`; true when it answered a request whose outcome is what the page wanted. */
  refused(message: BridgeMessage): boolean;
  /** Send what is queued, if the page may send. */
  flush(): void;
}
