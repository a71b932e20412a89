// Types of dialogs.js: the user dialogs and the built-in user tools.

import type { AguiBridge, ToolDefinition } from "./connection.js";

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
  /**
   * Keep these tools listed to agents even when the room defers most tools behind `tool_search`:
   * `true` pins every tool registered here, a list pins those kinds (default false).
   */
  pinned?: boolean | ReadonlyArray<keyof UserToolDefinitions>;
}

/** Register the built-in user tools; resolves to their MCP names by kind. */
export declare function registerUserTools(bridge: AguiBridge, options?: UserToolsOptions):
  Promise<{ confirm?: string; prompt?: string; choose?: string }>;

