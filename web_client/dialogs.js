/**
 * dialogs.js — the user dialogs (confirmDialog(), promptDialog(), chooseDialog()) and the built-in
 * user tools that show them to the user for an agent (registerUserTools()). Types: dialogs.d.ts.
 *
 * The dialogs are native modal <dialog>s, one at a time; their styles are injected on first use.
 */
/** @import * as types from "./dialogs.js" */
/** @import { ToolHandler } from "./connection.js" */
import { abortError } from "./errors.js";

const STYLE_ID = "agui-bridge-styles";
const STYLES = `
.agui-dialog {
  --agui-bg: #ffffff; --agui-fg: #1b1f24; --agui-muted: #57606a; --agui-border: #d0d7de;
  --agui-accent: #0b57d0; --agui-accent-fg: #ffffff; --agui-focus: #0b57d0;
  box-sizing: border-box; width: min(28rem, calc(100vw - 2rem)); max-height: calc(100vh - 2rem);
  padding: 0; border: 1px solid var(--agui-border); border-radius: 12px;
  background: var(--agui-bg); color: var(--agui-fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  box-shadow: 0 20px 50px rgba(0, 0, 0, 0.25);
}
@media (prefers-color-scheme: dark) {
  .agui-dialog { --agui-bg: #1f2329; --agui-fg: #e6edf3; --agui-muted: #9da7b3; --agui-border: #3d444d;
    --agui-accent: #7cacf8; --agui-accent-fg: #0d1117; --agui-focus: #7cacf8; }
}
.agui-dialog::backdrop { background: rgba(15, 20, 25, 0.55); }
.agui-dialog *, .agui-dialog *::before, .agui-dialog *::after { box-sizing: border-box; }
.agui-dialog__form { display: flex; flex-direction: column; gap: 0.75rem; margin: 0; padding: 1.25rem 1.25rem 1rem; }
.agui-dialog__origin { margin: 0; font-size: 0.8rem; color: var(--agui-muted); letter-spacing: 0.02em; }
.agui-dialog__title { margin: 0; font-size: 1.15rem; line-height: 1.3; font-weight: 650; overflow-wrap: anywhere; }
.agui-dialog__body { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 50vh; overflow: auto; }
.agui-dialog__body:empty { display: none; }
.agui-dialog__label { font-weight: 600; font-size: 0.9rem; }
.agui-dialog__input { width: 100%; padding: 0.5rem 0.6rem; font: inherit; color: inherit; background: transparent;
  border: 1px solid var(--agui-border); border-radius: 8px; }
/* The list scrolls, and a scroll box clips what sticks out of it: its padding leaves room for the options'
   focus ring (3px + 2px offset), the negative margin keeps them aligned with the title. */
.agui-dialog__options { display: flex; flex-direction: column; gap: 0.4rem; margin: -6px; padding: 6px; border: 0;
  max-height: 45vh; overflow: auto; }
.agui-dialog__actions { display: flex; justify-content: flex-end; gap: 0.5rem; flex-wrap: wrap; margin-top: 0.25rem; }
.agui-dialog__button { min-height: 2.25rem; padding: 0.4rem 1rem; font: inherit; font-weight: 600; cursor: pointer;
  color: var(--agui-fg); background: transparent; border: 1px solid var(--agui-border); border-radius: 8px; }
.agui-dialog__button:hover { border-color: var(--agui-muted); }
.agui-dialog__button--primary { color: var(--agui-accent-fg); background: var(--agui-accent); border-color: var(--agui-accent); }
/* flex: none: squeezed into a scrolling column, options would shrink and their labels spill over each other. */
.agui-dialog__button--option { flex: none; width: 100%; text-align: left; font-weight: 500;
  overflow-wrap: anywhere; }
.agui-dialog__button:focus-visible, .agui-dialog__input:focus-visible {
  outline: 3px solid var(--agui-focus); outline-offset: 2px; }
@media (prefers-reduced-motion: no-preference) {
  .agui-dialog[open] { animation: agui-dialog-in 120ms ease-out; }
  @keyframes agui-dialog-in { from { opacity: 0; transform: translateY(6px) scale(0.98); } }
}
`;

/** @param {Document} doc */
function injectStyles(doc) {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = STYLES;
  (doc.head || doc.documentElement).append(style);
}

let dialogCounter = 0;
/** @type {Promise<unknown>} */
let dialogQueue = Promise.resolve();

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {Document} doc
 * @param {K} tag
 * @param {Record<string, string | null | undefined>} [props]  `text`, `className`, or attributes; null ones are left out
 * @param {Node[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
function element(doc, tag, props = {}, children = []) {
  const node = doc.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/**
 * What a dialog's `build` returns: the control to focus first, and how to read the dialog's
 * `returnValue` ("" after Escape) into its answer (or throw UserCancelledError).
 * @template T
 * @typedef {{initialFocus: HTMLElement | null, read: (value: string) => T}} DialogControl
 */

/**
 * Show one modal dialog; dialogs wait for the one before them to close.
 * `build(parts)` adds the controls and returns {initialFocus, read(value)}.
 * Resolves to `read(returnValue)` ("cancel" on Escape), rejects with AbortError when `signal` aborts.
 * @template T
 * @param {{title: string, body: string, origin?: string, signal?: AbortSignal,
 *   build: (parts: {doc: Document, form: HTMLFormElement, id: string, close: (value: string) => void}) => DialogControl<T>}} spec
 * @returns {Promise<T>}
 */
function showDialog({ title, body, origin, build, signal }) {
  const doc = globalThis.document;
  if (!doc) return Promise.reject(new Error("Dialogs need a document."));
  if (signal?.aborted) return Promise.reject(abortError(signal.reason));
  /** @type {Promise<T>} */
  const turn = dialogQueue.then(() => new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal.reason));
      return;
    }
    injectStyles(doc);
    const id = `agui-dialog-${++dialogCounter}`;
    const dialog = element(doc, "dialog", {
      className: "agui-dialog", role: "dialog", "aria-modal": "true",
      "aria-labelledby": `${id}-title`, "aria-describedby": body ? `${id}-body` : null, "data-agui-dialog": id,
    });
    const form = element(doc, "form", { className: "agui-dialog__form", method: "dialog" });
    form.append(
      element(doc, "p", { className: "agui-dialog__origin", text: origin ?? "An AI agent asks you" }),
      element(doc, "h2", { className: "agui-dialog__title", id: `${id}-title`, text: String(title ?? "") }),
      element(doc, "p", { className: "agui-dialog__body", id: `${id}-body`, text: body ? String(body) : "" }),
    );
    const control = build({ doc, form, id, close: (value) => dialog.close(value) });
    dialog.append(form);
    const previousFocus = /** @type {HTMLElement | null} */ (doc.activeElement);
    let settled = false;
    /** @param {() => void} outcome */
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      if (dialog.open) dialog.close();
      dialog.remove();
      if (previousFocus && typeof previousFocus.focus === "function" && previousFocus.isConnected) {
        previousFocus.focus({ preventScroll: true });
      }
      outcome();
    };
    const onAbort = () => finish(() => reject(abortError(signal?.reason)));
    signal?.addEventListener("abort", onAbort, { once: true });
    dialog.addEventListener("close", () => {
      const value = dialog.returnValue;
      finish(() => {
        try {
          resolve(control.read(value));
        } catch (error) {
          reject(error);
        }
      });
    });
    // Escape closes the dialog with an empty returnValue, which reads as "cancel".
    dialog.addEventListener("cancel", () => {
      dialog.returnValue = "";
    });
    doc.body.append(dialog);
    dialog.returnValue = "";
    dialog.showModal();
    control.initialFocus?.focus();
  }));
  dialogQueue = turn.catch(() => {});
  return turn;
}

/**
 * @param {Document} doc
 * @param {string} text
 * @param {{primary?: boolean, value?: string, kind?: string}} [options]
 */
function button(doc, text, { primary = false, value, kind } = {}) {
  const classes = ["agui-dialog__button"];
  if (primary) classes.push("agui-dialog__button--primary");
  if (kind) classes.push(`agui-dialog__button--${kind}`);
  return element(doc, "button", { type: "button", className: classes.join(" "), value, text });
}

/**
 * Ask the user to confirm. Resolves to "ok" or "cancel" (Escape and the backdrop's close are "cancel").
 * The Cancel button has the initial focus, so a reflexive Enter does not approve anything.
 * @type {typeof types.confirmDialog}
 */
export function confirmDialog({ title, body = "", ok_text = "OK", cancel_text = "Cancel", origin }, { signal } = {}) {
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, close }) => {
      const cancel = button(doc, cancel_text || "Cancel", { value: "cancel" });
      const ok = button(doc, ok_text || "OK", { primary: true, value: "ok" });
      cancel.addEventListener("click", () => close("cancel"));
      ok.addEventListener("click", () => close("ok"));
      form.append(element(doc, "div", { className: "agui-dialog__actions" }, [cancel, ok]));
      /** @type {DialogControl<"ok" | "cancel">} */
      const control = { initialFocus: cancel, read: (value) => (value === "ok" ? "ok" : "cancel") };
      return control;
    },
  });
}

/**
 * The error a prompt or choice rejects with when the user cancels.
 * @implements {types.UserCancelledError}
 */
export class UserCancelledError extends Error {
  /** @param {string} [message] */
  constructor(message = "The user cancelled.") {
    super(message);
    this.name = "UserCancelledError";
  }
}

/**
 * Ask the user for free text. Resolves to the text (possibly ""); rejects with UserCancelledError
 * when the user cancels (Cancel button or Escape).
 * @type {typeof types.promptDialog}
 */
export function promptDialog({ title, body = "", placeholder = "", default: initial = "", ok_text = "OK",
  cancel_text = "Cancel", label = "Your answer", multiline = false, origin }, { signal } = {}) {
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, id, close }) => {
      const input = element(doc, multiline ? "textarea" : "input", {
        id: `${id}-input`, className: "agui-dialog__input", placeholder: placeholder || null, autocomplete: "off",
        rows: multiline ? "4" : null, type: multiline ? null : "text",
      });
      input.value = initial ?? "";
      const cancel = button(doc, cancel_text || "Cancel");
      const ok = button(doc, ok_text || "OK", { primary: true });
      cancel.addEventListener("click", () => close("cancel"));
      ok.addEventListener("click", () => close("ok"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        close("ok");
      });
      form.append(
        element(doc, "label", { className: "agui-dialog__label", for: input.id, text: label }),
        input,
        element(doc, "div", { className: "agui-dialog__actions" }, [cancel, ok]),
      );
      return {
        initialFocus: input,
        read: (value) => {
          if (value !== "ok") throw new UserCancelledError("The user cancelled the prompt without answering.");
          return input.value;
        },
      };
    },
  });
}

/**
 * Ask the user to choose one of `options` (strings). Resolves to the chosen option; rejects with
 * UserCancelledError when the user cancels.
 * @type {typeof types.chooseDialog}
 */
export function chooseDialog({ title, body = "", options = [], cancel_text = "Cancel", origin }, { signal } = {}) {
  const choices = (Array.isArray(options) ? options : []).map((o) => String(o));
  if (!choices.length) return Promise.reject(new TypeError("chooseDialog needs at least one option."));
  return showDialog({
    title, body, origin, signal,
    build: ({ doc, form, id, close }) => {
      const buttons = choices.map((choice, index) => {
        const option = button(doc, choice, { kind: "option", value: `option:${index}` });
        option.addEventListener("click", () => close(`option:${index}`));
        return option;
      });
      const group = element(doc, "div", { className: "agui-dialog__options", role: "group",
        "aria-labelledby": `${id}-title` }, buttons);
      const cancel = button(doc, cancel_text || "Cancel");
      cancel.addEventListener("click", () => close("cancel"));
      form.append(group, element(doc, "div", { className: "agui-dialog__actions" }, [cancel]));
      return {
        initialFocus: buttons[0],
        read: (value) => {
          const match = /^option:(\d+)$/.exec(value || "");
          if (!match) throw new UserCancelledError("The user cancelled without choosing.");
          return choices[Number(match[1])];
        },
      };
    },
  });
}

const ASK_ANNOTATIONS = { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/**
 * The built-in user tools' definitions (what agents see).
 * @type {typeof types.USER_TOOLS}
 */
export const USER_TOOLS = Object.freeze(/** @satisfies {types.UserToolDefinitions} */ ({
  confirm: {
    name: "agui_user_confirm",
    title: "Ask the user to confirm",
    description:
      "Show the user a modal dialog asking them to confirm or refuse an action (for example a payment or a deletion) " +
      "and wait for their decision. Returns the text \"ok\" if the user confirmed and \"cancel\" if they refused or " +
      "dismissed the dialog. Only proceed with the action on \"ok\".",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "A short question, e.g. \"Transfer 100 € to Alice?\"", minLength: 1 },
        body: { type: "string", description: "Details the user needs to decide (amounts, recipients, consequences)." },
        ok_text: { type: "string", description: "Label of the confirm button (default \"OK\"), e.g. \"Transfer\"." },
        cancel_text: { type: "string", description: "Label of the refuse button (default \"Cancel\")." },
      },
      required: ["title"],
    },
    annotations: ASK_ANNOTATIONS,
  },
  prompt: {
    name: "agui_user_prompt",
    title: "Ask the user for text",
    description:
      "Show the user a modal dialog with a question and a text field and wait for their answer. Returns the text " +
      "the user entered (possibly empty). If the user cancels, the call fails with an error saying so.",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "The question to ask.", minLength: 1 },
        body: { type: "string", description: "More context for the question." },
        placeholder: { type: "string", description: "Hint shown in the empty text field." },
        default: { type: "string", description: "Text the field starts with." },
      },
      required: ["title"],
    },
    annotations: ASK_ANNOTATIONS,
  },
  choose: {
    name: "agui_user_choose",
    title: "Ask the user to choose",
    description:
      "Show the user a modal dialog with a list of options and wait for them to pick one. Returns the chosen " +
      "option exactly as given. If the user cancels, the call fails with an error saying so.",
    inputSchema: {
      type: "object",
      properties: {
        title: { type: "string", description: "The question to ask.", minLength: 1 },
        body: { type: "string", description: "More context for the choice." },
        options: {
          type: "array", items: { type: "string", minLength: 1 }, minItems: 1, maxItems: 50,
          description: "The options to choose from, as short labels.",
        },
      },
      required: ["title", "options"],
    },
    annotations: ASK_ANNOTATIONS,
  },
}));

/**
 * Register the built-in user tools on a bridge (all three by default).
 * Resolves to the MCP names they got, e.g. {confirm: "agui_user_confirm", prompt: …, choose: …}.
 * Abort `signal` to unregister them. `pinned` (true, or the kinds to pin) keeps them listed to agents
 * when the room defers most tools behind tool_search.
 * @type {typeof types.registerUserTools}
 */
export async function registerUserTools(bridge, { confirm = true, prompt = true, choose = true, signal, origin,
  pinned = false } = {}) {
  /** @type {Array<[keyof types.UserToolDefinitions, boolean, ToolHandler<any>]>} */
  const kinds = [
    ["confirm", confirm, (params, ctx) => confirmDialog({ ...params, origin }, { signal: ctx.signal })],
    ["prompt", prompt, (params, ctx) => promptDialog({ ...params, origin }, { signal: ctx.signal })],
    ["choose", choose, (params, ctx) => chooseDialog({ ...params, origin }, { signal: ctx.signal })],
  ];
  /** @type {{confirm?: string, prompt?: string, choose?: string}} */
  const names = {};
  await Promise.all(kinds.filter(([, wanted]) => wanted).map(async ([kind, , show]) => {
    const pin = pinned === true || (Array.isArray(pinned) && pinned.includes(kind));
    names[kind] = await bridge.registerTool(pin ? { ...USER_TOOLS[kind], pinned: true } : USER_TOOLS[kind], show,
      { signal });
  }));
  return names;
}
