// Types of errors.js: the errors the client's modules share.

/** An Error carrying the bridge's `agui.error` code (`unauthorized`, `invalid_tool`, `closed`, `unreachable`, …). */
export declare class AguiBridgeError extends Error {
  constructor(message: string, options?: { code?: string; detail?: unknown });
  code: string;
  detail: unknown;
}

/** A readable message for anything a handler may throw (an Error, a string, an object, undefined…). */
export declare function errorMessage(thrown: unknown): string;

/**
 * The error an aborted operation rejects with: `reason` itself when it is an Error, else a
 * DOMException named "AbortError" with `reason` (a string) as its message. Internal to the client
 * (agui-bridge.js does not export it).
 */
export declare function abortError(reason?: unknown): Error;
