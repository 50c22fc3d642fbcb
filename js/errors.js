/**
 * The error every runstore call rejects with: a real `Error` with a stable `code` to branch on
 * and the structured fields of the failure (for example `expected` and `actual` on
 * `SEQUENCE_CONFLICT`).
 */
export class RunStoreError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [fields]
   */
  constructor(code, message, fields = {}) {
    super(message);
    define(this, 'name', 'RunStoreError');
    define(this, 'code', code);
    for (const [key, value] of Object.entries(fields)) {
      if (!Object.hasOwn(this, key) && !BUILT_IN_KEYS.has(key)) define(this, key, value);
    }
  }
}

/** What an Error has from JS itself, as it was when the package loaded: no field may hide it. */
const BUILT_IN_KEYS = new Set([...Object.getOwnPropertyNames(Object.prototype), ...Object.getOwnPropertyNames(Error.prototype), 'stack']);

/**
 * Sets a property as a data property: an assignment would run a setter of the same name that
 * someone put on Object.prototype, and the error would lack the field.
 */
function define(object, key, value) {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Every code a RunStoreError can carry. */
export const ErrorCode = Object.freeze({
  SEQUENCE_CONFLICT: 'SEQUENCE_CONFLICT',
  CONFLICT: 'CONFLICT',
  IDEMPOTENCY_CONFLICT: 'IDEMPOTENCY_CONFLICT',
  NOT_FOUND: 'NOT_FOUND',
  INVALID_INPUT: 'INVALID_INPUT',
  SERIALIZATION: 'SERIALIZATION',
  SCHEMA_TOO_NEW: 'SCHEMA_TOO_NEW',
  BUSY: 'BUSY',
  STORAGE_FULL: 'STORAGE_FULL',
  OPFS_UNAVAILABLE: 'OPFS_UNAVAILABLE',
  CORRUPT: 'CORRUPT',
  BACKEND: 'BACKEND',
  UNAVAILABLE: 'UNAVAILABLE',
  UNAUTHORIZED: 'UNAUTHORIZED',
  WRONG_KEY: 'WRONG_KEY',
  FENCED: 'FENCED',
  LEASE_HELD: 'LEASE_HELD',
  // runstore/workflow's
  NON_DETERMINISM: 'NON_DETERMINISM',
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
  STEP_FAILED: 'STEP_FAILED',
  WORKFLOW_FAILED: 'WORKFLOW_FAILED',
  CANCELLED: 'CANCELLED',
});

/** Whether `error` is a trap of the store's WebAssembly: as the wasm threw it, or as made a RunStoreError. */
export function isTrap(error) {
  return isRuntimeError(error) || (error instanceof RunStoreError && error.trapped === true);
}

const isRuntimeError = (error) => typeof WebAssembly === 'object' && error instanceof WebAssembly.RuntimeError;

/** A trap of the store's WebAssembly (an out-of-bounds access, a Rust panic) as a RunStoreError. */
export function trapError(error) {
  if (!isRuntimeError(error)) return error;
  return new RunStoreError('BACKEND', `the store's WebAssembly code trapped (${error.message})`, { trapped: true });
}

/** Turns an error thrown by the wasm store, or one carried over from the worker, into a RunStoreError. */
export function toRunStoreError(error) {
  if (error instanceof RunStoreError) return error;
  if (isRuntimeError(error)) return trapError(error);
  if (error && typeof error === 'object' && typeof error.code === 'string') {
    const fields = error.fields && typeof error.fields === 'object' ? error.fields : ownFields(error);
    return new RunStoreError(error.code, String(error.message), fields);
  }
  return new RunStoreError('BACKEND', String(error?.message ?? error));
}

function ownFields(error) {
  const fields = {};
  for (const key of Object.keys(error)) {
    if (!['code', 'message', 'name', 'stack'].includes(key)) define(fields, key, error[key]);
  }
  return fields;
}

/** A plain object that crosses postMessage intact (Error instances lose their own fields). */
export function serializeError(error) {
  const e = toRunStoreError(error);
  return { code: e.code, message: e.message, fields: ownFields(e) };
}
