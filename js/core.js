// The store itself, for code that runs in its own dedicated worker or in Node: call
// `await init()` once, then `await RunStoreCore.open(name, options)`. Methods are synchronous
// and throw a RunStoreError with `.code`.
import initWasm, { RunStoreCore } from '../pkg/runstore.js';
import { toRunStoreError } from './errors.js';
import { METHODS, PARAMETERS } from './methods.js';
import { WRITES, callAsText, stepAsText } from './wire.js';

// The wasm throws plain Errors carrying `code` and fields; callers get RunStoreError instances
// they can test with instanceof, the same class the main-thread client rejects with.
//
// Most reads are not exports of their own either: they share one, `__read`, which reads each
// argument as the method did (src/wasm/facade_reads.rs). The hot ones (a history, a head, a
// checkpoint) keep their own exports.
for (const method of METHODS) {
  if (WRITES.has(method)) continue;
  const call = RunStoreCore.prototype[method] ?? function (first, second, third) {
    return this.__read(method, first, second, third);
  };
  define(method, function (...args) {
    try {
      return call.apply(this, args);
    } catch (error) {
      throw toRunStoreError(error);
    }
  });
}

// Every write method, and `commit`, runs as a step, its arguments sent as JSON text with their
// bytes beside them, as the main-thread client sends them (wire.js, host.js): the wasm reads
// text at a fraction of the cost of walking the same objects through calls into JS, and one
// way in reads every write's arguments (`__call`). Arguments that are not plain data go as
// values (`__callValues`), and the walk names the field it refuses.
for (const method of WRITES) {
  define(method, function (...args) {
    const message = method === 'commit' ? stepAsText(args[0]) : callAsText(method, args);
    try {
      return message === null
        ? this.__callValues(method, null, args)
        : this.__call(method, message.requestId, message.text, message.holes, message.bytes);
    } catch (error) {
      throw toRunStoreError(error);
    }
  });
}

/** Puts `fn` on the class as `method`, with the method's name and its declared parameters' count. */
function define(method, fn) {
  Object.defineProperty(fn, 'length', { value: PARAMETERS[method].length });
  Object.defineProperty(fn, 'name', { value: method });
  RunStoreCore.prototype[method] = fn;
}
const open = RunStoreCore.open;
RunStoreCore.open = (...args) => open.apply(RunStoreCore, args).catch((error) => {
  throw toRunStoreError(error);
});
const close = RunStoreCore.prototype.close;
RunStoreCore.prototype.close = function () {
  return close.call(this).catch((error) => {
    throw toRunStoreError(error);
  });
};

/** The package's own wasm, loading or loaded (null before the first `init()`, or after it failed). */
let ownWasm = null;

/**
 * Loads the store's wasm once (later calls return the same instance). Without an argument it
 * finds the package's own `runstore_bg.wasm`: fetched next to this module in a browser, read
 * from the package's folder where the module is a file (Node, Deno, Bun), whose `fetch`
 * cannot read `file:` URLs. An argument (bytes, a URL, a Response, a compiled module) is
 * passed to wasm-bindgen's init as given.
 */
function init(moduleOrPath) {
  if (moduleOrPath !== undefined) return initWasm(moduleOrPath);
  // Once: every store opened in a Node process (each in-process RunStore) calls init().
  ownWasm ??= initOwnWasm().catch((error) => {
    ownWasm = null;
    throw error;
  });
  return ownWasm;
}

async function initOwnWasm() {
  const wasm = new URL('../pkg/runstore_bg.wasm', import.meta.url);
  return initWasm(wasm.protocol === 'file:' ? { module_or_path: await readFileUrl(wasm) } : undefined);
}

/** The bytes of a `file:` URL, through node:fs (imported only here, so bundles for the web never load it). */
async function readFileUrl(url) {
  const fs = 'node:fs/promises';
  const { readFile } = await import(/* @vite-ignore */ /* webpackIgnore: true */ fs);
  return readFile(url);
}

export { init, RunStoreCore };
export { RunStoreError, ErrorCode } from './errors.js';
// A worker has no navigator.storage.persist(): ask for persistence from the page.
export { storageEstimate } from './storage.js';
