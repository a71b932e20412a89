/**
 * forms.js — declarative WebMCP without the browser's help: serveForms() serves every
 * `<form toolname="…" tooldescription="…">` of the page as a tool, its named controls the
 * parameters. Types: forms.d.ts.
 *
 * As the WebMCP declarative draft has it: the schema is compiled from the controls (type, `required`,
 * `min`/`max`/`step`, `pattern`, lengths, the options of a `<select>` or a radio group); a
 * parameter's description is its `toolparamdescription`, else its `<label>`'s text, else its
 * `aria-description` (a group's: its `<fieldset>`'s `toolparamdescription`, else its `<legend>`).
 * A call fills the form where the user sees it and, with `toolautosubmit`, submits it; without, the
 * user checks it and presses submit. The page answers through the submit event (`agentInvoked`,
 * `respondWith(promise)`); otherwise the result is the submitted values (and the URL the form
 * navigates to).
 */
/** @import * as types from "./forms.js" */
/** @import { AguiBridge, JSONValue, ObjectSchema } from "./connection.js" */
/** @import { ToolCallContext, ToolDefinition, ToolResult } from "./connection.js" */
import { abortError, errorMessage } from "./errors.js";

/** Attributes that change a form's tool (its name, description or schema). */
const WATCHED_ATTRIBUTES = ["toolname", "tooldescription", "toolautosubmit", "toolparamdescription", "name", "type",
  "required", "min", "max", "step", "pattern", "minlength", "maxlength", "disabled", "readonly", "multiple", "value",
  "label", "for", "id", "form", "aria-description"];
const TEXT_TYPES = new Set(["text", "search", "email", "url", "tel", "password"]);
const NOT_PARAMETERS = new Set(["hidden", "submit", "reset", "button", "image", "file"]);
const LABELABLE = "button, input, meter, output, progress, select, textarea";
// A change in (or of) one of these may change a form's tool: the forms, their controls (one outside
// its form with `form=`), labels (a `<label for>` anywhere), groups and options.
const FORM_PARTS = "form, label, fieldset, legend, select, option, input, textarea";
// An element added or removed that is (or holds) one of these may too.
const FORM_CONTENT = "form, label, input, select, textarea";
// HTML time-like values, as the controls give them.
const DAY = "[0-9]{4,}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
const TIME = "([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,3})?)?";
const TIME_PATTERNS = /** @type {Record<string, string>} */ ({
  time: `^${TIME}$`,
  "datetime-local": `^${DAY}T${TIME}$`,
  month: "^[0-9]{4,}-(0[1-9]|1[0-2])$",
  week: "^[0-9]{4,}-W(0[1-9]|[1-4][0-9]|5[0-3])$",
  color: "^#[0-9a-fA-F]{6}$",
});
// JavaScript regex features RE2 (the bridge's matcher) refuses: such a `pattern` is left to the browser's check.
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k<|--|&&/;

/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Control */
/**
 * One parameter of a form's tool: the controls of one name.
 * @typedef {object} Field
 * @property {string} name
 * @property {Control[]} controls
 * @property {Record<string, unknown>} schema
 * @property {(value: unknown) => string | null} refuse  why the value cannot go into the controls, or null
 * @property {(value: unknown) => void} fill
 * @property {() => JSONValue} read  the value now, typed as the schema says
 */

const text = (/** @type {string | null | undefined} */ value) => (value ?? "").replace(/\s+/g, " ").trim();

/**
 * @param {Element} element
 * @returns {element is Control}
 */
function isControl(element) {
  return element instanceof HTMLInputElement || element instanceof HTMLSelectElement ||
    element instanceof HTMLTextAreaElement;
}

/**
 * Whether a change the MutationObserver reports may change a form's tool: the others (a page's own
 * list growing…) are not worth compiling every form again.
 * @param {MutationRecord} record
 */
function touchesForms(record) {
  const { target } = record;
  const changed = target.nodeType === Node.ELEMENT_NODE ? /** @type {Element} */ (target) : target.parentElement;
  if (changed?.closest(FORM_PARTS)) return true;
  if (record.type !== "childList") return false;
  for (const nodes of [record.addedNodes, record.removedNodes]) {
    for (const node of nodes) {
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      const element = /** @type {Element} */ (node);
      if (element.matches(FORM_CONTENT) || element.querySelector(FORM_CONTENT)) return true;
    }
  }
  return false;
}

/** @param {Element} element  a label or a legend: its text, without the controls inside it */
function ownText(element) {
  const copy = /** @type {Element} */ (element.cloneNode(true));
  for (const inner of copy.querySelectorAll(LABELABLE)) inner.remove();
  return text(copy.textContent);
}

/** @param {Control} control */
function labelText(control) {
  return [...(control.labels ?? [])].map(ownText).filter(Boolean).join("; ");
}

/**
 * @param {Control[]} controls
 * @param {boolean} group  radio buttons or checkboxes sharing a name
 */
function describe(controls, group) {
  if (!group) {
    const [control] = controls;
    return text(control.getAttribute("toolparamdescription")) || labelText(control) ||
      text(control.getAttribute("aria-description"));
  }
  const fieldset = controls[0].closest("fieldset");
  if (!fieldset || !controls.every((c) => fieldset.contains(c))) return "";
  const legend = [...fieldset.children].find((child) => child.localName === "legend");
  return text(fieldset.getAttribute("toolparamdescription")) || (legend ? ownText(legend) : "");
}

/**
 * `enum` of the values, and `oneOf` with their titles when a title says more than its value.
 * @param {Array<{value: string, title: string}>} choices
 */
function choiceSchema(choices) {
  const seen = new Set();
  const unique = choices.filter((c) => !seen.has(c.value) && seen.add(c.value));
  /** @type {Record<string, unknown>} */
  const schema = { type: "string", enum: unique.map((c) => c.value) };
  if (unique.some((c) => c.title && c.title !== c.value)) {
    schema.oneOf = unique.map((c) => (c.title ? { const: c.value, title: c.title } : { const: c.value }));
  }
  return schema;
}

/**
 * @param {HTMLInputElement} input
 * @param {string} name
 */
function numberAttribute(input, name) {
  const raw = input.getAttribute(name);
  const value = raw === null || raw.trim() === "" ? NaN : Number(raw);
  return Number.isFinite(value) ? value : undefined;
}

/** @param {HTMLInputElement} input  number or range */
function numberSchema(input) {
  const range = input.type === "range";
  const minimum = numberAttribute(input, "min") ?? (range ? 0 : undefined);
  const maximum = numberAttribute(input, "max") ?? (range ? 100 : undefined);
  /** @type {Record<string, unknown>} */
  const schema = { type: "number" };
  if (minimum !== undefined) schema.minimum = minimum;
  if (maximum !== undefined) schema.maximum = maximum;
  if (input.getAttribute("step")?.trim().toLowerCase() !== "any") {
    const step = numberAttribute(input, "step");
    const size = step !== undefined && step > 0 ? step : 1;
    const base = minimum ?? numberAttribute(input, "value") ?? 0;
    const onSteps = Math.abs(base / size - Math.round(base / size)) < 1e-9; // values are base + k × step
    if (Number.isInteger(size) && Number.isInteger(base)) schema.type = "integer";
    if (onSteps && size !== 1) schema.multipleOf = size;
  }
  return schema;
}

/** @param {HTMLInputElement | HTMLTextAreaElement} control */
function textSchema(control) {
  /** @type {Record<string, unknown>} */
  const schema = { type: "string" };
  const minLength = control.minLength >= 0 ? control.minLength : undefined;
  const maxLength = control.maxLength >= 0 ? control.maxLength : undefined;
  if (minLength) schema.minLength = minLength;
  if (maxLength !== undefined) schema.maxLength = maxLength;
  if (control instanceof HTMLInputElement) {
    if (control.type === "email" && !control.multiple) schema.format = "email";
    const pattern = control.getAttribute("pattern");
    if (pattern && !NOT_RE2.test(pattern)) {
      try {
        new RegExp(pattern, "v");
        schema.pattern = `^(?:${pattern})$`; // HTML matches the whole value
      } catch {
        /* the browser ignores an invalid pattern too */
      }
    }
  }
  return schema;
}

/**
 * The events a user's change of the control fires: `input`, then `change`.
 * @param {Control} control
 */
function announce(control) {
  control.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  control.dispatchEvent(new Event("change", { bubbles: true }));
}

/**
 * Set what the user would set, so that frameworks (React's controlled inputs) see it: the native
 * setter, then `input` and `change`.
 * @param {Control} control
 * @param {"value" | "checked"} property
 * @param {unknown} value
 */
function setAsTheUser(control, property, value) {
  const prototype = Object.getPrototypeOf(control);
  const setter = Object.getOwnPropertyDescriptor(prototype, property)?.set;
  if (setter) setter.call(control, value);
  else Reflect.set(control, property, value);
  announce(control);
}

/**
 * @param {Control} control
 * @param {string} value
 */
function fillText(control, value) {
  if (control.value !== value) setAsTheUser(control, "value", value);
}

/**
 * Whether an input of this type takes the value (a date input drops "tomorrow").
 * @param {HTMLInputElement} input
 * @param {string} value
 */
function inputTakes(input, value) {
  if (value === "") return true;
  const probe = input.ownerDocument.createElement("input");
  probe.type = input.type;
  probe.value = value;
  return probe.value !== "";
}

/**
 * The parameter a name's controls make, or null when they make none (mixed kinds, read-only…).
 * @param {string} name
 * @param {Control[]} controls
 * @returns {Field | null}
 */
function compileField(name, controls) {
  const [first] = controls;
  const inputs = controls.every((c) => c instanceof HTMLInputElement)
    ? /** @type {HTMLInputElement[]} */ (controls) : [];
  /** @type {Omit<Field, "name" | "controls" | "schema"> & {schema: Record<string, unknown>, group?: boolean}} */
  let field;
  if (inputs.length && inputs.every((i) => i.type === "radio")) {
    const choices = inputs.map((i) => ({ value: i.value, title: labelText(i) }));
    field = {
      group: true,
      schema: choiceSchema(choices),
      refuse: (value) => (inputs.some((i) => i.value === value) ? null : "is not one of the choices"),
      fill: (value) => {
        const chosen = inputs.find((i) => i.value === value);
        if (chosen && !chosen.checked) setAsTheUser(chosen, "checked", true);
      },
      read: () => inputs.find((i) => i.checked)?.value ?? null,
    };
  } else if (inputs.length > 1 && inputs.every((i) => i.type === "checkbox")) {
    const choices = inputs.map((i) => ({ value: i.value, title: labelText(i) }));
    field = {
      group: true,
      schema: { type: "array", items: choiceSchema(choices), uniqueItems: true },
      refuse: (value) => (Array.isArray(value) && value.every((v) => inputs.some((i) => i.value === v))
        ? null : "is not a list of the choices"),
      fill: (value) => {
        const wanted = new Set(/** @type {unknown[]} */ (value));
        for (const input of inputs) {
          if (input.checked !== wanted.has(input.value)) setAsTheUser(input, "checked", wanted.has(input.value));
        }
      },
      read: () => inputs.filter((i) => i.checked).map((i) => i.value),
    };
  } else if (controls.length > 1) {
    return null; // several controls of one name that are not a group: nothing one value could fill
  } else if (first instanceof HTMLSelectElement) {
    const options = [...first.options].filter((o) => !o.disabled && !(first.required && o.value === ""));
    const choices = choiceSchema(options.map((o) => ({ value: o.value, title: text(o.label) })));
    const allowed = (/** @type {unknown} */ v) => options.some((o) => o.value === v);
    field = first.multiple ? {
      schema: { type: "array", items: choices, uniqueItems: true },
      refuse: (value) => (Array.isArray(value) && value.every(allowed) ? null : "is not a list of the options"),
      fill: (value) => {
        const wanted = new Set(/** @type {unknown[]} */ (value));
        const changed = [...first.options].filter((o) => o.selected !== wanted.has(o.value));
        for (const option of changed) option.selected = !option.selected;
        if (changed.length) announce(first);
      },
      read: () => [...first.selectedOptions].map((o) => o.value),
    } : {
      schema: choices,
      refuse: (value) => (allowed(value) ? null : "is not one of the options"),
      fill: (value) => fillText(first, String(value)),
      read: () => first.value,
    };
  } else if (first instanceof HTMLTextAreaElement || TEXT_TYPES.has(first.type)) {
    if (/** @type {HTMLInputElement | HTMLTextAreaElement} */ (first).readOnly) return null;
    field = {
      schema: textSchema(/** @type {HTMLInputElement | HTMLTextAreaElement} */ (first)),
      refuse: (value) => (typeof value === "string" ? null : "is not a string"),
      fill: (value) => fillText(first, String(value)),
      read: () => first.value,
    };
  } else if (first.type === "checkbox") {
    const checkbox = /** @type {HTMLInputElement} */ (first);
    field = {
      // A required checkbox must be ticked for the form to be sent.
      schema: checkbox.required ? { type: "boolean", const: true } : { type: "boolean" },
      refuse: (value) => (typeof value === "boolean" ? null : "is not true or false"),
      fill: (value) => {
        if (checkbox.checked !== value) setAsTheUser(checkbox, "checked", value);
      },
      read: () => checkbox.checked,
    };
  } else if (first.type === "number" || first.type === "range") {
    const input = /** @type {HTMLInputElement} */ (first);
    if (input.readOnly) return null;
    field = {
      schema: numberSchema(input),
      refuse: (value) => (typeof value === "number" && Number.isFinite(value) ? null : "is not a number"),
      fill: (value) => fillText(input, String(value)),
      read: () => (input.value === "" ? null : Number(input.value)),
    };
  } else if (first.type === "date" || first.type in TIME_PATTERNS) {
    const input = /** @type {HTMLInputElement} */ (first);
    if (input.readOnly && input.type !== "color") return null;
    field = {
      schema: input.type === "date" ? { type: "string", format: "date" }
        : { type: "string", pattern: TIME_PATTERNS[input.type] },
      refuse: (value) => (typeof value === "string" && inputTakes(input, value) ? null
        : `is not a value a ${input.type} field takes`),
      fill: (value) => fillText(input, String(value)),
      read: () => input.value,
    };
  } else {
    return null;
  }
  const description = describe(controls, Boolean(field.group));
  const schema = description ? { ...field.schema, description } : field.schema;
  return { name, controls, schema, refuse: field.refuse, fill: field.fill, read: field.read };
}

/**
 * The form's parameters, in the order of its controls.
 * @param {HTMLFormElement} form
 * @returns {Field[]}
 */
function compileFields(form) {
  /** @type {Map<string, Control[]>} */
  const byName = new Map();
  for (const element of form.elements) {
    if (!isControl(element)) continue;
    const name = element.name.trim();
    const parameter = !(element instanceof HTMLInputElement && NOT_PARAMETERS.has(element.type));
    if (name && parameter && !element.matches(":disabled")) byName.set(name, [...(byName.get(name) ?? []), element]);
  }
  return [...byName].map(([name, controls]) => compileField(name, controls)).filter((f) => f !== null);
}

/** @type {typeof types.formToolDefinition} */
export function formToolDefinition(form) {
  const name = text(form.getAttribute("toolname"));
  if (!name) return null;
  const fields = compileFields(form);
  const properties = Object.fromEntries(fields.map((f) => [f.name, f.schema]));
  /** @type {ObjectSchema} */
  const inputSchema = { type: "object", properties, additionalProperties: false };
  const required = fields.filter((f) => f.controls.some((c) => c.required)).map((f) => f.name);
  if (required.length) inputSchema.required = required;
  return { name, description: text(form.getAttribute("tooldescription")), inputSchema };
}

/**
 * The entries a submission sends, as text (a file as its name).
 * @param {HTMLFormElement} form
 * @param {HTMLElement | null} submitter
 * @returns {Array<[string, string]>}
 */
function formEntries(form, submitter) {
  return [...new FormData(form, submitter)].map(([name, entry]) =>
    [name, typeof entry === "string" ? entry : entry.name]);
}

/**
 * The values a submission sends: the parameters typed as their schemas say, the other fields (hidden
 * ones, the submit button's name) as text.
 * @param {HTMLFormElement} form
 * @param {HTMLElement | null} submitter
 */
function submittedValues(form, submitter) {
  /** @type {Record<string, JSONValue>} */
  const values = {};
  // Compiled again, not the call's: the user may have changed the form before submitting it.
  const fields = compileFields(form);
  const typed = new Set(fields.map((f) => f.name));
  for (const [name, value] of formEntries(form, submitter)) {
    if (typed.has(name)) continue;
    const previous = values[name];
    values[name] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  for (const field of fields) {
    const value = field.read();
    if (value !== null) values[field.name] = value;
  }
  return values;
}

/**
 * Where a submission that is not prevented goes, or null (a dialog form).
 * @param {HTMLFormElement} form
 * @param {HTMLElement | null} submitter
 */
function navigationUrl(form, submitter) {
  const button = submitter instanceof HTMLButtonElement || submitter instanceof HTMLInputElement ? submitter : null;
  const method = (button?.hasAttribute("formmethod") ? button.formMethod : form.method).toLowerCase();
  if (method === "dialog") return null;
  const url = new URL(button?.hasAttribute("formaction") ? button.formAction : form.action);
  if (method === "get") {
    url.search = new URLSearchParams(formEntries(form, submitter)).toString();
  }
  return url.href;
}

/** @param {HTMLFormElement} form */
function submitButton(form) {
  for (const element of form.elements) {
    const submits = (element instanceof HTMLButtonElement && element.type === "submit") ||
      (element instanceof HTMLInputElement && (element.type === "submit" || element.type === "image"));
    if (submits && !element.matches(":disabled")) return /** @type {HTMLButtonElement | HTMLInputElement} */ (element);
  }
  return null;
}

/** @param {HTMLFormElement} form */
function validationProblems(form) {
  return [...form.elements].filter(isControl).filter((c) => c.willValidate && !c.validity.valid)
    .map((c) => `${c.name || "a field"}: ${c.validationMessage}`).join("; ");
}

/**
 * A call of a form's tool, between the filling and the submission.
 * @typedef {object} Pending
 * @property {(event: SubmitEvent) => void} submitted  the form is being submitted (its submit event)
 * @property {() => void} settle  the submit event is over: resolve with the page's answer or the values
 * @property {(error: unknown) => void} fail
 */

/**
 * A served form: its registration, and the call that has filled it, if any.
 * @typedef {object} Served
 * @property {string} name
 * @property {string} fingerprint  the definition's JSON: a change registers it again
 * @property {AbortController} controller  aborting it unregisters the tool
 * @property {Pending | null} pending
 */

/** The forms served on each bridge (at most one server per bridge). */
const servers = new WeakMap();

/** Serves the `<form toolname>`s of one document on one bridge. */
class FormTools {
  /**
   * @param {AguiBridge} bridge
   * @param {Document} document
   */
  constructor(bridge, document) {
    this.bridge = bridge;
    this.document = document;
    /** @type {Map<HTMLFormElement, Served>} */
    this.served = new Map();
    /** @type {Set<string>} names already reported as taken by an earlier form */
    this.duplicates = new Set();
    this.scheduled = false;
    this.observer = new MutationObserver((records) => {
      if (records.some(touchesForms)) this.schedule();
    });
    this.onSubmit = (/** @type {Event} */ event) => this.submitted(event);
    this.onReset = (/** @type {Event} */ event) => {
      const served = event.target instanceof HTMLFormElement ? this.served.get(event.target) : undefined;
      served?.pending?.fail(new Error("The form was reset before it was submitted."));
    };
    this.onClosed = (/** @type {Event} */ event) => {
      if (/** @type {CustomEvent} */ (event).detail?.state === "closed") this.dispose();
    };
  }

  start() {
    this.observer.observe(this.document, { subtree: true, childList: true, characterData: true, attributes: true,
      attributeFilter: WATCHED_ATTRIBUTES });
    // On the window, capturing: before the page's own submit handlers, which may call respondWith().
    this.document.defaultView?.addEventListener("submit", this.onSubmit, true);
    this.document.addEventListener("reset", this.onReset, true);
    this.bridge.addEventListener("statechange", this.onClosed);
    this.sync();
  }

  dispose() {
    if (servers.get(this.bridge) !== this) return;
    servers.delete(this.bridge);
    this.observer.disconnect();
    this.document.defaultView?.removeEventListener("submit", this.onSubmit, true);
    this.document.removeEventListener("reset", this.onReset, true);
    this.bridge.removeEventListener("statechange", this.onClosed);
    for (const form of [...this.served.keys()]) this.unserve(form, "Forms are no longer served.");
  }

  get tools() {
    return [...this.served.values()].map((s) => s.name);
  }

  /** @param {string} name */
  serves(name) {
    return [...this.document.querySelectorAll("form[toolname]")].some((f) => text(f.getAttribute("toolname")) === name);
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (servers.get(this.bridge) === this) this.sync();
    });
  }

  /** Register the forms that are tools now, register again those that changed, unregister the rest. */
  sync() {
    /** @type {Map<HTMLFormElement, ToolDefinition>} */
    const wanted = new Map();
    for (const form of /** @type {NodeListOf<HTMLFormElement>} */ (this.document.querySelectorAll("form[toolname]"))) {
      const definition = formToolDefinition(form);
      if (definition) wanted.set(form, definition);
    }
    // One form per name: the one served under it already, else the first in the document.
    /** @type {Map<string, HTMLFormElement>} */
    const owners = new Map();
    for (const [form, { name }] of wanted) if (this.served.get(form)?.name === name) owners.set(name, form);
    for (const [form, { name }] of wanted) {
      if (!owners.has(name)) owners.set(name, form);
      if (owners.get(name) === form) continue;
      wanted.delete(form);
      this.reportDuplicate(name);
    }
    for (const [form, served] of [...this.served]) {
      if (wanted.get(form)?.name !== served.name) this.unserve(form, "The form is no longer a tool.");
    }
    for (const [form, definition] of wanted) {
      const fingerprint = JSON.stringify(definition);
      const served = this.served.get(form);
      if (served?.fingerprint === fingerprint) continue;
      const controller = served?.controller ?? new AbortController();
      /** @type {Served} */
      const entry = served ?? { name: definition.name, fingerprint, controller, pending: null };
      entry.fingerprint = fingerprint;
      this.served.set(form, entry);
      // The same name registered again replaces the definition; a call filling the form goes on.
      this.bridge.registerTool(definition, (params, ctx) => this.run(form, entry, params, ctx),
        { signal: controller.signal }).catch((error) => {
        if (error?.name === "AbortError" || controller.signal.aborted) return;
        this.bridge.dispatchEvent(new CustomEvent("error", { detail: { code: "webmcp", tool: definition.name,
          message: `The form tool ${JSON.stringify(definition.name)} was not registered: ${errorMessage(error)}` } }));
      });
    }
  }

  /** @param {string} name */
  reportDuplicate(name) {
    if (this.duplicates.has(name)) return;
    this.duplicates.add(name);
    this.bridge.dispatchEvent(new CustomEvent("error", { detail: { code: "webmcp", tool: name,
      message: `Two forms are named ${JSON.stringify(name)} (toolname): only the first is served.` } }));
  }

  /**
   * @param {HTMLFormElement} form
   * @param {string} reason
   */
  unserve(form, reason) {
    const served = this.served.get(form);
    if (!served) return;
    this.served.delete(form);
    served.pending?.fail(new Error(reason));
    served.controller.abort(reason);
  }

  /**
   * A call: fill the form where the user sees it, then submit it (`toolautosubmit`) or wait for the user to.
   * @param {HTMLFormElement} form
   * @param {Served} served
   * @param {Record<string, unknown>} params
   * @param {ToolCallContext} ctx
   * @returns {Promise<ToolResult>}
   */
  async run(form, served, params, ctx) {
    if (this.served.get(form) !== served) throw new Error("The form is no longer a tool.");
    const fields = new Map(compileFields(form).map((f) => [f.name, f]));
    // Every value is checked before the form is touched: a refused call changes nothing.
    for (const [name, value] of Object.entries(params ?? {})) {
      const field = fields.get(name);
      if (!field) throw new Error(`The form has no field named ${JSON.stringify(name)}.`);
      const why = field.refuse(value);
      if (why) throw new Error(`${JSON.stringify(value)} ${why} of ${JSON.stringify(name)}.`);
    }
    const autosubmit = form.hasAttribute("toolautosubmit");
    const submitter = submitButton(form);
    if (!autosubmit && !submitter) throw new Error("The form has no submit button for the user to press.");
    served.pending?.fail(new Error("A newer call of this tool took the form over."));

    form.scrollIntoView({ block: "center", inline: "nearest" });
    for (const [name, value] of Object.entries(params ?? {})) {
      const field = /** @type {Field} */ (fields.get(name));
      field.controls[0].focus({ preventScroll: true });
      field.fill(value);
    }
    const outcome = this.awaitSubmission(form, served, submitter, ctx.signal);
    if (autosubmit) {
      if (!form.noValidate && !submitter?.formNoValidate && !form.checkValidity()) {
        served.pending?.fail(new Error(`The form is not valid: ${validationProblems(form)}.`));
        form.reportValidity();
      } else {
        const pending = /** @type {Pending} */ (served.pending);
        try {
          form.requestSubmit(submitter); // dispatches the submit event before it returns
        } catch (error) {
          pending.fail(error);
        }
        if (served.pending === pending) pending.fail(new Error("The form was not submitted."));
        else pending.settle();
      }
    } else {
      submitter?.focus({ preventScroll: true });
      const label = text(submitter?.textContent) || text(submitter?.getAttribute("value")) || "submit";
      ctx.progress(1, 2, `The form is filled in the page: waiting for the user to check it and press ${label}.`);
    }
    return outcome;
  }

  /**
   * The call's result, once the form is submitted: what the page's submit handler gives `respondWith()`,
   * else the submitted values (and the URL the form navigates to).
   * @param {HTMLFormElement} form
   * @param {Served} served
   * @param {HTMLElement | null} submitter
   * @param {AbortSignal} signal  the agent cancels: the user's values stay in the form
   * @returns {Promise<ToolResult>}
   */
  awaitSubmission(form, served, submitter, signal) {
    form.setAttribute("data-tool-form-active", "");
    submitter?.setAttribute("data-tool-submit-active", "");
    return new Promise((resolve, reject) => {
      const end = () => {
        if (served.pending === pending) served.pending = null;
        signal.removeEventListener("abort", onAbort);
        if (served.pending === null) {
          form.removeAttribute("data-tool-form-active");
          submitter?.removeAttribute("data-tool-submit-active");
        }
      };
      const onAbort = () => pending.fail(abortError(signal.reason));
      /** @type {Pending} */
      const pending = {
        settle: () => {},
        submitted: (event) => {
          end();
          /** @type {Promise<ToolResult> | null} */
          let response = null;
          Object.defineProperty(event, "agentInvoked", { value: true, configurable: true });
          Object.defineProperty(event, "respondWith", {
            configurable: true,
            value: (/** @type {unknown} */ answer) => {
              if (response) throw new DOMException("respondWith() was already called.", "InvalidStateError");
              if (!event.eventPhase) throw new DOMException("respondWith() is too late: the submit event is over.",
                "InvalidStateError");
              event.preventDefault(); // the page answers: the form does not navigate away
              response = Promise.resolve(/** @type {ToolResult} */ (answer));
            },
          });
          // Settled once every submit handler has run: right after requestSubmit(), or a task later
          // (a user's click dispatches the event within its own task).
          pending.settle = () => {
            pending.settle = () => {};
            if (response) {
              response.then(resolve, reject);
              return;
            }
            const values = submittedValues(form, event.submitter);
            const url = event.defaultPrevented ? null : navigationUrl(form, event.submitter);
            resolve(url ? { values, url } : { values });
          };
          setTimeout(() => pending.settle(), 0);
        },
        fail: (error) => {
          end();
          reject(error);
        },
      };
      served.pending = pending;
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** @param {Event} event  any submit event of the window */
  submitted(event) {
    const form = event.target;
    if (!(event instanceof SubmitEvent) || !(form instanceof HTMLFormElement)) return;
    this.served.get(form)?.pending?.submitted(event);
  }
}

/** @type {typeof types.serveForms} */
export function serveForms(bridge, { document = globalThis.document, signal } = {}) {
  if (!document) throw new TypeError("serveForms() needs a document: it serves the forms of a page.");
  if (signal?.aborted) {
    servers.get(bridge)?.dispose(); // as if it aborted now
    return { tools: [], dispose: () => {} };
  }
  /** @type {FormTools} */
  let tools = servers.get(bridge);
  if (!tools) {
    tools = new FormTools(bridge, document);
    servers.set(bridge, tools);
    tools.start();
  }
  const served = tools;
  signal?.addEventListener("abort", () => served.dispose(), { once: true });
  return {
    get tools() {
      return served.tools;
    },
    dispose: () => served.dispose(),
  };
}

/** @type {typeof types.servesFormTool} */
export function servesFormTool(bridge, name) {
  return Boolean(servers.get(bridge)?.serves(name));
}
