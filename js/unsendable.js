// Naming the argument postMessage could not send, for the INVALID_INPUT it becomes.
import { RunStoreError } from './errors.js';
import { PARAMETERS } from './methods.js';

/** The INVALID_INPUT for `args` of `method` that a postMessage refused with `error`. */
export function unsendable(method, args, error) {
  // Refused before it was sent (wire.js), as the store would refuse it.
  if (error instanceof RunStoreError) return error;
  const field = unsendablePath(method, args);
  return new RunStoreError('INVALID_INPUT', `${field} cannot be sent to the store: ${describe(error)}`, { field });
}

/** Nesting and breadth beyond which the search for an unsendable value stops. */
const SEARCH_DEPTH = 64;
const SEARCH_ENTRIES = 10_000;

/**
 * The path of the first value in `args` that postMessage cannot send, from the method's
 * parameter names: `events[0].data`. Runs only after a send failed.
 */
function unsendablePath(method, args) {
  const names = PARAMETERS[method] ?? [];
  for (let i = 0; i < args.length; i++) {
    const path = firstUnsendable(args[i], names[i] ?? `arguments[${i}]`, 0);
    if (path) return path;
  }
  return names[0] ?? method;
}

function firstUnsendable(value, path, depth) {
  try {
    structuredClone(value);
    return null;
  } catch {
    // Look inside for the value that failed.
  }
  if (depth >= SEARCH_DEPTH || value === null || typeof value !== 'object') return path;
  try {
    const isArray = Array.isArray(value);
    // Own entries only: a sparse array of length 2 ** 32 - 1 has few.
    const entries = Object.entries(value).slice(0, SEARCH_ENTRIES);
    for (const [key, item] of entries) {
      const step = isArray ? `[${key}]` : `.${clip(key)}`;
      const inner = firstUnsendable(item, path + step, depth + 1);
      if (inner) return inner;
    }
  } catch {
    // A Proxy or getter that throws: this value is the one.
  }
  return path;
}

/** A caller's text cut to a length a message can quote. */
function clip(text, chars = 64) {
  return text.length <= chars ? text : `${text.slice(0, chars)}… (${text.length} characters)`;
}

/** The message of a thrown value, which may itself be hostile. */
function describe(error) {
  try {
    return clip(String(error?.message ?? error), 200);
  } catch {
    return 'it cannot be cloned';
  }
}
