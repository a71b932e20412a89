// Types of calls.js: the calls agents make to a page, their answers and the outbox.
// Internal to the client: agui-bridge.js does not export it.

import type { ActiveCall, AguiBridgeEventMap, ToolHandler } from "./connection.js";
import type { BridgeMessage } from "./transport.js";

export type { BridgeMessage };

/** A call this page is running. */
export interface Call {
  callId: string;
  tool: string;
  name: string;
  params: Record<string, unknown>;
  controller: AbortController;
  startedAt: number;
  /** Answered or cancelled: nothing more is sent for it. */
  done: boolean;
}

/** An input request this page made (`askAgent`), until the agent's answers come back with its id. */
export interface Ask {
  /** The tool whose call asked. */
  tool: string;
  /** The keys it asked: only answers to these are taken. */
  keys: string[];
  /** The handler's `state`, as JSON, given back as `requestState` with the answers. */
  state: string | undefined;
}

/** The events the calls announce, with their details. */
export type CallEvents = Pick<AguiBridgeEventMap, "invoke" | "result" | "cancel" | "progress">;

/** What the calls need of the connection. */
export interface CallsLink {
  /** The handler the page registered under `tool`, if any. */
  handler(tool: string): ToolHandler<any> | undefined;
  /** Invocations for tools without a handler are held (a reloaded page registering its tools again). */
  holding(): boolean;
  send(message: Record<string, unknown>): boolean;
  emit<K extends keyof CallEvents>(type: K, detail: CallEvents[K]["detail"]): void;
}

export declare class Calls {
  constructor(link: CallsLink);
  /** Invocations held until their tool is registered again, by call id. */
  readonly parked: Map<string, BridgeMessage>;
  readonly active: ActiveCall[];
  /** Run an `agui.tool.invoke` (once per call id, however often the bridge replays it). */
  invoke(message: BridgeMessage): void;
  /** Run the invocations held for `tool`. */
  release(tool: string): void;
  /** Stop holding: run what is held (`run`: each answered with an error, no handler) or drop it. */
  unpark(run: boolean): void;
  /** An `agui.tool.cancel`: abort the call's signal; nothing is sent for it. */
  cancelled(message: BridgeMessage): void;
  abortAll(reason: string): void;
  forgetAnswers(): void;
  /** Send the answers held while away, and those the bridge still waits for (`waiting` call ids). */
  deliver(waiting: string[]): void;
}
