// Runs one call of the main-thread client (a message captured by wire.js) on an open store
// and produces its answer and the change notice of what it committed. Touches no worker,
// channel or page: the store's worker (serve.js) uses it, and so can any other host.
import { RunStoreError } from './errors.js';
import { METHODS, WRITE_RESULTS, importChange } from './methods.js';
import { WRITES } from './wire.js';

const allowed = new Set(METHODS);
const noBytes = [];

/**
 * An answer as the store's JSON text (a history page, a checkpoint, a page of checkpoints): it
 * crosses to the page as one string, parsed there once (batch.js, settleCall), where the
 * parsed answer would be parsed in the worker and then structured-cloned object by object.
 */
export class JsonText {
  constructor(text) {
    this.text = text;
  }
}

/** Reads whose answers the store writes as JSON text, by method: the page parses each once. */
const AS_TEXT = {
  __proto__: null,
  readHistory: (store, args) => store.__historyText(args[0], 0, args[1]),
  readHistoryFrom: (store, args) => store.__historyText(args[0], args[1], args[2]),
  loadCheckpoint: (store, args) => store.__checkpointText(args[0]),
  listRunCheckpoints: (store, args) => store.__runCheckpointsText(args[0], args[1]),
};

/**
 * Runs `message` on `store` (a RunStoreCore); returns `{ value, change }`: the call's result
 * (a JsonText for a history page or checkpoints) and what it changed (null for a read, or a
 * write that changed nothing). Throws what the store throws.
 *
 * Every write runs as one step under the message's request id: the store alone decides
 * whether it applies, and a request sent again answers what its first application answered.
 * A write sent again is announced again (a tab that missed the first notice, because the
 * leader that committed it ended before announcing it, hears this one); tabs drop a request
 * id they heard before (changes.js).
 */
export function runCall(store, message) {
  const { method, requestId = null } = message;
  if (!allowed.has(method)) {
    throw new RunStoreError('INVALID_INPUT', `unknown method ${String(method)}`, { field: 'method' });
  }
  if (WRITES.has(method)) return write(store, message, requestId);
  const args = Array.isArray(message.args) ? message.args : [];
  const asText = AS_TEXT[method];
  if (asText) return { value: new JsonText(asText(store, args)), change: null };
  if (method === 'importDatabase') {
    const outcome = store.importDatabase(args[0], requestId ?? args[1]);
    return { value: outcome, change: importChange(requestId ?? args[1]) };
  }
  return { value: store[method](...args), change: null };
}

function write(store, message, requestId) {
  const { method, text } = message;
  const written =
    typeof text === 'string'
      ? store.__write(method, requestId, text, message.holes ?? noBytes, message.bytes ?? noBytes)
      : store.__writeValues(method, requestId, Array.isArray(message.args) ? message.args : []);
  const { outcomes, replayed, change } = written;
  const value = method === 'commit' ? { outcomes, replayed } : WRITE_RESULTS[method](outcomes[0]);
  return { value, change };
}
