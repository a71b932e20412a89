// Types of forms.js: declarative WebMCP, `<form toolname>`s served as tools.

import type { AguiBridge, ToolDefinition } from "./connection.js";

export interface ServeFormsOptions {
  /** The document whose forms are served (default: this page's). */
  document?: Document;
  /** Abort to stop serving them (same as `dispose()`). */
  signal?: AbortSignal;
}

export interface FormToolsHandle {
  /** The names of the forms' tools served now. */
  readonly tools: string[];
  /** Stop: the forms' tools are unregistered and calls waiting for a submission fail. */
  dispose(): void;
}

/**
 * The result of a form's tool when the page's submit handler does not call `respondWith()`: the
 * submitted values (the parameters typed as their schema says, other fields as text), and `url`
 * when the form navigates (a GET form's with its query).
 */
export interface FormSubmission {
  values: Record<string, unknown>;
  url?: string;
}

/**
 * What `SubmitEvent` has, for the submission that completes an agent's call of a form's tool.
 * `respondWith(answer)` (during the event) makes `answer` (or what its promise gives) the call's result;
 * the form does not navigate.
 */
export interface AgentSubmitEvent extends SubmitEvent {
  readonly agentInvoked: boolean;
  respondWith(answer: unknown): void;
}

/**
 * Serve every `<form toolname="…" tooldescription="…">` of the document as a tool, following the forms
 * added, changed and removed later. A call fills the form where the user sees it (it scrolls into view,
 * each field gets focus and `input`/`change` events) and submits it with `toolautosubmit`; without, the
 * call's progress says it waits for the user, who checks the form and presses submit (an agent's cancel
 * leaves what is in the form). While a call has filled the form, it has a `data-tool-form-active`
 * attribute (its submit button `data-tool-submit-active`). One server per bridge: a second call returns
 * the same forms' handle. `connect()` calls it unless given `forms: false`.
 */
export declare function serveForms(bridge: AguiBridge, options?: ServeFormsOptions): FormToolsHandle;

/**
 * The tool a form makes: name (`toolname`), description (`tooldescription`) and the input schema compiled
 * from its controls; null when it has no `toolname`.
 */
export declare function formToolDefinition(form: HTMLFormElement): ToolDefinition | null;

/**
 * Whether `serveForms()` serves a form of this name on this bridge (webmcp.js asks, so that the
 * browser's own tool for the same form is not served a second time). Internal.
 */
export declare function servesFormTool(bridge: AguiBridge, name: string): boolean;
