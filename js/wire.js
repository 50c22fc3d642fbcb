// How a call travels to the store's worker: captured when it is made, so that a caller that
// changes its objects afterwards never changes what is written, sent or sent again after a
// hand-off (SPEC §9).
//
// A write (every write method, `commit`) goes as its arguments' JSON text: posting one string
// costs less than cloning objects, and the worker's wasm reads the text at a fraction of the
// cost of reading the same objects through calls into JS (`__write`,
// src/wasm/facade_steps.rs and json_text.rs). JSON has no bytes: a `Uint8Array` is written as
// `null` and a copy of it travels beside the text with the ordinal of that null (a "hole").
// Only what the text reads back as exactly is encoded, within the limits the store's walk
// (src/wasm/walk.rs) applies: plain objects and arrays, finite numbers, well-formed strings,
// booleans, null and Uint8Arrays, each property read once. A write holding anything else (a
// Date, a class instance, NaN, a value over a limit) is cloned instead and goes as its
// values, which the store's walk then refuses naming the field, as on `runstore/core`. Other
// calls are cloned when they hold objects.
import { PARAMETERS, WRITE_RESULTS } from './methods.js';
import { RunStoreError } from './errors.js';
import { unsendable } from './unsendable.js';

/** Nesting at which the store refuses a value (src/wasm/walk.rs, MAX_DEPTH), from each argument. */
const MAX_DEPTH = 64;
/** What the store's walk lets one argument take (walk.rs, MAX_ARGUMENT_BYTES and NODE_BYTES). */
const MAX_ARGUMENT_BYTES = 2 * (64 << 20);
const NODE_BYTES = 32;
/** The longest string and byte array the walk takes (MAX_STRING_CHARS, MAX_BLOB_BYTES). */
const MAX_STRING_CHARS = 1 << 20;
const MAX_BLOB_BYTES = 64 << 20;

/**
 * What a store worker of this package reads on a tab's link: writes as captured text, run by
 * host.js. A leader running an older package says none, and takes calls as values.
 */
export const PROTOCOL = 2;

/** The calls that travel as one step under a request id. */
export const WRITES = new Set([...Object.keys(WRITE_RESULTS), 'commit']);

/** Thrown when a value has no exact JSON text; the call then goes as values. */
const UNFAITHFUL = new Error('not plain data');

/**
 * The message for a call of `method` with `args`, captured now: for a write
 * `{ method, requestId, text, holes, bytes }` (or `{ method, requestId, args }` with cloned
 * values when they are not plain data), for any other call `{ method, args }`. `requestId` is
 * the write's (for `commit`, the step's own when it has one, else `requestId`). Throws the
 * INVALID_INPUT a value that cannot be cloned gets (a function, a Proxy or getter that throws).
 */
export function capture(method, args, requestId) {
  if (method === 'importDatabase') {
    // Its bytes go as they are, up to 512 MiB: copied now, as a clone, not as text.
    return { method, requestId, args: cloned(method, [args[0], requestId]) };
  }
  if (!WRITES.has(method)) return { method, args: plain(args) ? args : cloned(method, args) };
  const message = method === 'commit' ? encodeStep(args[0], requestId) : encodeCall(method, args, requestId);
  if (message) return message;
  if (method !== 'commit') return { method, requestId, args: cloned(method, args) };
  return withOwnId({ method, requestId: stepRequestId(args[0], requestId), args: cloned(method, args) }, requestId);
}

/**
 * Items an array argument may have: the store refuses a longer one at once (src/wasm/walk.rs:
 * NODE_BYTES an item against MAX_ARGUMENT_BYTES an argument). Refused before it is cloned or
 * posted: WebKit clones a sparse array item by item up to its length (an array of 2^32 - 1
 * items hung the page for minutes).
 */
const MAX_ARRAY_ITEMS = MAX_ARGUMENT_BYTES / NODE_BYTES;

/** Throws the store's INVALID_INPUT for an argument that is an array longer than it takes. */
export function refuseLongArrays(method, args) {
  for (let i = 0; i < args.length; i++) {
    let length = 0;
    try {
      length = Array.isArray(args[i]) ? args[i].length : 0;
    } catch {
      continue; // a revoked Proxy: cloning it names it
    }
    if (length > MAX_ARRAY_ITEMS) {
      const field = PARAMETERS[method]?.[i] ?? `arguments[${i}]`;
      throw new RunStoreError('INVALID_INPUT', `${field} has ${length} items, more than one argument can hold`, { field });
    }
  }
}

const CLONEABLE_PRIMITIVES = new Set(['string', 'number', 'boolean', 'bigint', 'undefined']);

/** Whether every argument is a primitive that can be sent, which nothing can change after the call. */
function plain(args) {
  return args.every((value) => value === null || CLONEABLE_PRIMITIVES.has(typeof value));
}

function cloned(method, args) {
  try {
    return structuredClone(args);
  } catch (error) {
    throw unsendable(method, args, error);
  }
}

/**
 * A write method's call as `{ text, holes, bytes }` for the store's `__call`, or null when its
 * arguments are not plain data. Its byte arrays are the caller's own, as in `stepAsText`.
 */
export function callAsText(method, args) {
  return encodeCall(method, args, null, false);
}

/**
 * A write method's call as text, or null when its arguments are not plain data; its byte
 * arrays copied unless `copy` is false.
 */
function encodeCall(method, args, requestId, copy = true) {
  const encoder = new Encoder(copy);
  // Trailing absent arguments are left out; the store reads them as absent. One in between
  // has no JSON form: those go as values.
  let count = args.length;
  while (count > 0 && args[count - 1] === undefined) count--;
  const parts = [];
  try {
    for (let i = 0; i < count; i++) parts.push(encoder.argument(args[i]));
  } catch {
    return null;
  }
  return encoder.message(method, requestId, `[${parts.join(',')}]`);
}

/**
 * A step as text, or null when it is not plain data. Its `requestId` property is read once,
 * with the rest: a step without one is committed under `requestId` (the store fills it in).
 * Its byte arrays are copied unless `copy` is false.
 */
function encodeStep(step, requestId, copy = true) {
  const encoder = new Encoder(copy);
  let text;
  let own;
  try {
    text = encoder.argument(step, (key, value) => {
      if (key === 'requestId') own = value;
    });
  } catch {
    return null;
  }
  return withOwnId(encoder.message('commit', requestIdOf(own, requestId), `[${text}]`), requestId);
}

/**
 * A step as `{ requestId, text, holes, bytes }` for the store's `__call`, or null when it is
 * not plain data (the store's walk then names what it refuses). Under the step's own request
 * id, or none. Its byte arrays are the caller's own, not copies: the store reads them before
 * the caller can change them.
 */
export function stepAsText(step) {
  return encodeStep(step, null, false);
}

/**
 * Marks a step that travels under the client's request id (`madeId`): no other call uses
 * that id, so a replay of it can only be this call's own, sent again after a hand-off.
 */
function withOwnId(message, requestId) {
  if (requestId !== null && message.requestId === requestId) message.madeId = true;
  return message;
}

/** The request id a step travels under: its own, or the client's when it has none. */
function requestIdOf(own, requestId) {
  if (typeof own === 'string') return own;
  return own === undefined || own === null ? requestId : null;
}

function stepRequestId(step, requestId) {
  try {
    return requestIdOf(step !== null && typeof step === 'object' ? step.requestId : undefined, requestId);
  } catch {
    return null;
  }
}

/** Writes values as JSON text, counting nulls (a byte array's hole is one) and each argument's size. */
class Encoder {
  nulls = 0;
  holes = [];
  bytes = [];
  left = 0;

  /** `copy`: whether byte arrays travel as copies made now (a message posted later) or as they are. */
  constructor(copy) {
    this.copy = copy;
  }

  /** One argument's text; `onTopField(key, value)` hears each field of a top-level object. */
  argument(value, onTopField) {
    this.left = MAX_ARGUMENT_BYTES;
    return this.value(value, 0, onTopField);
  }

  message(method, requestId, text) {
    return { method, requestId, text, holes: this.holes, bytes: this.bytes };
  }

  spend(bytes) {
    this.left -= bytes;
    if (this.left < 0) throw UNFAITHFUL;
  }

  value(value, depth, onTopField) {
    this.spend(NODE_BYTES);
    switch (typeof value) {
      case 'string':
        if (value.length > MAX_STRING_CHARS || !wellFormed(value)) throw UNFAITHFUL;
        this.spend(value.length);
        return JSON.stringify(value);
      case 'number':
        if (!Number.isFinite(value)) throw UNFAITHFUL;
        return String(value);
      case 'boolean':
        return value ? 'true' : 'false';
      case 'object':
        if (value === null) return this.null();
        if (depth >= MAX_DEPTH) throw UNFAITHFUL;
        if (ArrayBuffer.isView(value)) return this.hole(value);
        return Array.isArray(value) ? this.array(value, depth) : this.object(value, depth, onTopField);
      default:
        // undefined inside an array, bigint, symbol, function.
        throw UNFAITHFUL;
    }
  }

  null() {
    this.nulls++;
    return 'null';
  }

  /** A Uint8Array, sent beside the text in place of a null: copied now, unless told not to. */
  hole(view) {
    if (Object.prototype.toString.call(view) !== '[object Uint8Array]') throw UNFAITHFUL;
    const length = view.byteLength;
    // A detached array: the store's walk names it.
    if (length > MAX_BLOB_BYTES || (length === 0 && view.buffer.detached)) throw UNFAITHFUL;
    this.spend(length);
    let bytes = view;
    if (this.copy) {
      bytes = new Uint8Array(length);
      bytes.set(view);
    }
    this.holes.push(this.nulls);
    this.bytes.push(bytes);
    return this.null();
  }

  array(items, depth) {
    const length = items.length;
    if (length * NODE_BYTES > this.left) throw UNFAITHFUL;
    let text = '[';
    for (let i = 0; i < length; i++) {
      if (i > 0) text += ',';
      text += this.value(items[i], depth + 1);
    }
    return `${text}]`;
  }

  /** A plain object, as the store's walk takes one: its prototype is null or has none itself. */
  object(object, depth, onTopField) {
    const prototype = Object.getPrototypeOf(object);
    if (prototype !== null && Object.getPrototypeOf(prototype) !== null) throw UNFAITHFUL;
    const keys = Object.keys(object);
    if (keys.length * NODE_BYTES > this.left) throw UNFAITHFUL;
    let text = '{';
    let first = true;
    for (const key of keys) {
      // The store refuses it (as a field it would set the prototype); its walk says so.
      if (key === '__proto__' || key.length > MAX_STRING_CHARS || !wellFormed(key)) throw UNFAITHFUL;
      this.spend(key.length);
      const value = object[key];
      onTopField?.(key, value);
      // An absent optional field, as the walk reads it.
      if (value === undefined) continue;
      text += `${first ? '' : ','}${JSON.stringify(key)}:${this.value(value, depth + 1)}`;
      first = false;
    }
    return `${text}}`;
  }
}

/**
 * `message` with its arguments as values (a write captured as text parsed back, its bytes in
 * their holes): the form a leader running an older package takes, which also wants a step's
 * request id inside the step.
 */
export function asValues(message) {
  if (message.text === undefined) return message;
  const { id, method, requestId, text, holes, bytes } = message;
  let nulls = 0;
  let next = 0;
  const fill = (value) => {
    if (value === null) {
      const ordinal = nulls++;
      return holes[next] === ordinal ? bytes[next++] : null;
    }
    if (typeof value === 'object') {
      for (const key of Object.keys(value)) value[key] = fill(value[key]);
    }
    return value;
  };
  const args = fill(JSON.parse(text));
  const step = args[0];
  if (method === 'commit' && step !== null && typeof step === 'object' && step.requestId == null) step.requestId = requestId;
  return { id, method, requestId, args };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string is valid Unicode: JSON text would spell a lone surrogate as an escape. */
const wellFormed =
  typeof String.prototype.isWellFormed === 'function'
    ? (text) => text.isWellFormed()
    : (text) => !LONE_SURROGATE.test(text);
