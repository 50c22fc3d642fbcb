// The built-ins the store uses on the values it is given and on the values it answers with,
// taken when the package loads. What a caller does to JS's built-ins afterwards (a getter on
// Uint8Array.prototype, a setter on Object.prototype, a replaced Object.entries) changes
// nothing the store reads or builds: arguments are read through their own properties and
// internal slots only, and answers are built with data properties, never by assignment (which
// would run a prototype's setter). Every export is imported by the wasm with `catch` (see
// walk.rs and to_js.rs): a Proxy's trap or an own getter that throws becomes an error there.
//
// Nothing here may depend on what can be changed later: no iteration protocol (for-of, spread,
// array destructuring), no method looked up on a built-in prototype at call time.

const { apply, defineProperty, getPrototypeOf } = Reflect;
const { entries, hasOwn, getOwnPropertyDescriptor } = Object;
const { isArray } = Array;
const { isView } = ArrayBuffer;
const { parse } = JSON;
const NativeError = Error;
const Bytes = Uint8Array;
const TypedArray = getPrototypeOf(Uint8Array.prototype);
const getterOf = (object, key) => getOwnPropertyDescriptor(object, key)?.get;
const typedArrayName = getterOf(TypedArray, Symbol.toStringTag);
const byteLengthOf = getterOf(TypedArray, 'byteLength');
const bufferOf = getterOf(TypedArray, 'buffer');
const byteOffsetOf = getterOf(TypedArray, 'byteOffset');
// Browsers before `ArrayBuffer.prototype.detached` read a detached view as empty.
const detachedOf = getterOf(ArrayBuffer.prototype, 'detached');
const copyFrom = TypedArray.set;
const { isWellFormed, charCodeAt } = String.prototype;

// ----- reading arguments -----

export function is_array(value) {
  return isArray(value);
}

export function is_view(value) {
  return isView(value);
}

export function prototype_of(value) {
  return getPrototypeOf(value);
}

/** Whether a string is valid UTF-16 (no lone surrogate). */
export function is_well_formed(text) {
  if (isWellFormed !== undefined) return apply(isWellFormed, text, []);
  for (let i = 0; i < text.length; i++) {
    const unit = apply(charCodeAt, text, [i]);
    if (unit >= 0xdc00 && unit <= 0xdfff) return false;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = apply(charCodeAt, text, [i + 1]);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    }
  }
  return true;
}

/** `[key, value]` pairs of an object's own enumerable properties (its own getters run once). */
export function own_entries(value) {
  return entries(value);
}

/** An array's `length` (its own property; a Proxy's trap answers). */
export function length_of(array) {
  return array.length;
}

/** The item at `index`: undefined for a hole, never read from a prototype. */
export function own_item(array, index) {
  return hasOwn(array, index) ? array[index] : undefined;
}

/** `"Uint8Array"`, another typed array's name, or undefined (a DataView, anything else). */
export function typed_array_name(value) {
  return apply(typedArrayName, value, []);
}

/** A typed array's length in bytes, from its internal slot: 0 once detached. */
export function byte_length(view) {
  return apply(byteLengthOf, view, []);
}

export function is_detached(view) {
  return detachedOf !== undefined && apply(detachedOf, apply(bufferOf, view, []), []) === true;
}

/** Copies the typed array `source` into `target`, a view of wasm memory. */
export function copy_bytes(target, source) {
  apply(copyFrom, target, [source]);
}

// ----- building answers -----

function define(object, key, value) {
  defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The value of the JSON `text`, with a copy of `bytes[start, end)` in place of each `null`
 * that `places` (JSON: `[[start, end, key or index, ...], ...]`) points at. JSON.parse makes
 * every property as a data property, and so does `define`.
 */
export function from_json(text, places, bytes) {
  const root = parse(text);
  if (places === undefined) return root;
  const list = parse(places);
  for (let i = 0; i < list.length; i++) {
    const place = list[i];
    let holder = root;
    for (let k = 2; k < place.length - 1; k++) holder = holder[place[k]];
    define(holder, place[place.length - 1], copy_out(bytes, place[0], place[1]));
  }
  return root;
}

/** A new `Uint8Array` holding `bytes[start, end)`, where `bytes` may be a view of wasm memory. */
export function copy_out(bytes, start, end) {
  const offset = apply(byteOffsetOf, bytes, []) + start;
  return new Bytes(new Bytes(apply(bufferOf, bytes, []), offset, end - start));
}

/** An `Error` named `RunStoreError` with the fields of the JSON object `fields` as its own. */
export function make_error(message, fields) {
  const error = new NativeError(message);
  define(error, 'name', 'RunStoreError');
  const list = entries(parse(fields));
  for (let i = 0; i < list.length; i++) define(error, list[i][0], list[i][1]);
  return error;
}
