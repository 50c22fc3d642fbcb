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
    this.name = 'RunStoreError';
    this.code = code;
    for (const [key, value] of Object.entries(fields)) {
      if (!(key in this)) this[key] = value;
    }
  }
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
});

/** Turns an error from the wasm store or from the worker's message into a RunStoreError. */
export function toRunStoreError(error) {
  if (error instanceof RunStoreError) return error;
  if (error && typeof error === 'object' && typeof error.code === 'string') {
    const { code, message, name: _name, stack: _stack, ...fields } = error;
    return new RunStoreError(code, String(message), { ...fields, ...(error.fields ?? {}) });
  }
  return new RunStoreError('BACKEND', String(error?.message ?? error));
}

/** A plain object that crosses postMessage intact (Error instances lose their own fields). */
export function serializeError(error) {
  const e = toRunStoreError(error);
  const fields = {};
  for (const key of Object.keys(e)) {
    if (key !== 'code' && key !== 'name') fields[key] = e[key];
  }
  return { code: e.code, message: e.message, fields };
}
