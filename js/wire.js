// How a call travels to the store's worker. A write goes as its step's JSON text when its
// arguments are plain data: posting one string costs less than cloning objects, and the
// worker's wasm parses the text at a fraction of the cost of reading the same objects through
// calls into JS (`__commitText`, src/wasm/json_text.rs; BENCHMARKS.md). Only values that the
// text reads back as exactly are encoded: plain objects and arrays, finite numbers,
// well-formed strings, booleans and null, each property read once. A call holding anything
// else (a Uint8Array, a Date, a class instance, a getter that throws) goes as its arguments,
// cloned, as every other call does; the getters it holds then run once more for the clone.
import { PARAMETERS, PLAIN_WRITES, WRITE_OPERATIONS } from './methods.js';
import { RunStoreError } from './errors.js';

/** Writes whose arguments always hold bytes (a Uint8Array), which JSON cannot carry. */
const WITH_BYTES = new Set(['insertOutbox', 'putArtifact', 'saveConversation', 'putPackage', 'putPackageForTypes']);

/** The writes that may travel as text. */
export const TEXT_WRITES = new Set(
  Object.keys(WRITE_OPERATIONS).filter((method) => !PLAIN_WRITES.has(method) && !WITH_BYTES.has(method)),
);

/** Nesting at which the store refuses a value (src/wasm/walk.rs, MAX_DEPTH), counted from the step. */
const MAX_DEPTH = 64;
/**
 * Values one call may encode before it is sent as arguments instead, where the store's walk
 * judges its size (its own limit is about as many values).
 */
const MAX_VALUES = 1 << 22;

/** Thrown when a value has no exact JSON text; the call then goes as arguments. */
const UNFAITHFUL = new Error('not plain data');

/**
 * The message for a call: `{ id, method, requestId, step, operation }` for a write whose
 * arguments encode (`step` its step's text; `operation` what its change notice reads, see
 * `encodeOperation`), else `{ id, method, args, requestId }`.
 */
export function callMessage(id, method, args, requestId) {
  refuseLongArrays(method, args);
  if (TEXT_WRITES.has(method) && !withOutboxRows(method, args)) {
    const encoded = encodeOperation(WRITE_OPERATIONS[method].operation(...args));
    if (encoded) {
      const step = `{"requestId":${JSON.stringify(requestId ?? null)},"operations":[${encoded.text}]}`;
      return { id, method, requestId, step, operation: encoded.light };
    }
  }
  return { id, method, args, requestId };
}

/**
 * Items an array argument may have: the store refuses a longer one at once (src/wasm/walk.rs:
 * 32 bytes an item against 128 MiB an argument). Refused here, before postMessage: WebKit
 * clones a sparse array item by item up to its length (2^32 - 1 took minutes).
 */
const MAX_ARRAY_ITEMS = (128 * 2 ** 20) / 32;

/** Throws the store's INVALID_INPUT for an argument that is an array longer than it takes. */
function refuseLongArrays(method, args) {
  args.forEach((arg, i) => {
    let length = 0;
    try {
      length = Array.isArray(arg) ? arg.length : 0;
    } catch {
      return; // a revoked Proxy: the store names it
    }
    if (length > MAX_ARRAY_ITEMS) {
      const field = PARAMETERS[method]?.[i] ?? `arguments[${i}]`;
      throw new RunStoreError('INVALID_INPUT', `${field} has ${length} items, more than one argument can hold`, { field });
    }
  });
}

/**
 * An append whose outbox rows hold their inputs as bytes: it goes as arguments without its
 * events being encoded first (they come before the rows) and thrown away.
 */
function withOutboxRows(method, args) {
  return method === 'appendWithOutbox' && Array.isArray(args[3]) && args[3].length > 0;
}

/**
 * `message` as arguments: the form every version of the store's worker takes (a leader tab
 * running an older package does not read text; see tabs.js).
 */
export function asArguments(message, args) {
  if (message.step === undefined) return message;
  const { id, method, requestId } = message;
  return { id, method, args, requestId };
}

/**
 * The operation's JSON text and its light form (what a change notice reads of it, see
 * methods.js: its own fields, an object field's own plain values, an array field's length),
 * or null when it is not plain data.
 */
export function encodeOperation(operation) {
  const budget = { left: MAX_VALUES };
  const light = {};
  const parts = [];
  try {
    for (const key of Object.keys(operation)) {
      const value = operation[key];
      if (value === undefined) continue;
      let shallow;
      if (Array.isArray(value)) light[key] = { length: value.length };
      else if (value !== null && typeof value === 'object') light[key] = shallow = {};
      else light[key] = value;
      // The step holds the operation at depth 2: its fields sit at depth 3.
      parts.push(`${JSON.stringify(key)}:${encode(value, 3, budget, shallow)}`);
    }
  } catch {
    // Not plain data, or a getter or Proxy that threw: the arguments go as they are.
    return null;
  }
  return { text: `{${parts.join(',')}}`, light };
}

function encode(value, depth, budget, shallow) {
  if (--budget.left < 0) throw UNFAITHFUL;
  switch (typeof value) {
    case 'string':
      if (!wellFormed(value)) throw UNFAITHFUL;
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw UNFAITHFUL;
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (depth >= MAX_DEPTH) throw UNFAITHFUL;
      return Array.isArray(value) ? encodeArray(value, depth, budget) : encodeObject(value, depth, budget, shallow);
    default:
      // undefined inside an array, bigint, symbol, function.
      throw UNFAITHFUL;
  }
}

function encodeArray(items, depth, budget) {
  const length = items.length;
  if (length > budget.left) throw UNFAITHFUL;
  let text = '[';
  for (let i = 0; i < length; i++) {
    if (i > 0) text += ',';
    text += encode(items[i], depth + 1, budget);
  }
  return `${text}]`;
}

/** A plain object, as the store's walk takes one: its prototype is null or has none itself. */
function encodeObject(object, depth, budget, shallow) {
  const prototype = Object.getPrototypeOf(object);
  if (prototype !== null && Object.getPrototypeOf(prototype) !== null) throw UNFAITHFUL;
  let text = '{';
  let first = true;
  for (const key of Object.keys(object)) {
    // The store refuses it (as a field it would set the prototype); its walk says so.
    if (key === '__proto__' || !wellFormed(key)) throw UNFAITHFUL;
    const value = object[key];
    // An absent optional field, as the walk reads it.
    if (value === undefined) continue;
    if (shallow && (value === null || typeof value !== 'object')) shallow[key] = value;
    text += `${first ? '' : ','}${JSON.stringify(key)}:${encode(value, depth + 1, budget)}`;
    first = false;
  }
  return `${text}}`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string is valid Unicode: JSON text would spell a lone surrogate as an escape. */
const wellFormed =
  typeof String.prototype.isWellFormed === 'function'
    ? (text) => text.isWellFormed()
    : (text) => !LONE_SURROGATE.test(text);
