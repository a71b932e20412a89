/**
 * errors.js — the errors the other modules of the client share.
 * Types: errors.d.ts.
 */
/** @import * as types from "./errors.js" */

/**
 * An Error carrying the bridge's `agui.error` code.
 * @implements {types.AguiBridgeError}
 */
export class AguiBridgeError extends Error {
  /**
   * @param {string} message
   * @param {{code?: string, detail?: unknown}} [options]
   */
  constructor(message, { code = "error", detail = null } = {}) {
    super(message);
    this.name = "AguiBridgeError";
    this.code = code;
    this.detail = detail;
  }
}

/** @type {typeof types.abortError} */
export function abortError(reason) {
  if (reason instanceof Error) return reason;
  return new DOMException(typeof reason === "string" ? reason : "The operation was aborted.", "AbortError");
}

/** @type {typeof types.errorMessage} */
export function errorMessage(thrown) {
  if (thrown && typeof thrown === "object" && "message" in thrown && typeof thrown.message === "string") {
    const name = "name" in thrown && typeof thrown.name === "string" ? thrown.name : ""; // an Error's or alike
    return thrown.message || name || "The tool failed without a message.";
  }
  if (typeof thrown === "string") return thrown || "The tool failed without a message.";
  if (thrown === undefined || thrown === null) return `The tool failed (it threw ${thrown}).`;
  try {
    const json = JSON.stringify(thrown);
    if (json !== undefined) return `The tool failed: ${json}`;
  } catch {
    /* fall through */
  }
  return `The tool failed: ${String(thrown)}`;
}
