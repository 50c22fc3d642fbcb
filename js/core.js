// The store itself, for code that runs in its own dedicated worker: call `await init()` once,
// then `await RunStoreCore.open(name, options)`. Methods are synchronous and throw a
// RunStoreError with `.code`.
import init, { RunStoreCore } from '../pkg/runstore.js';
import { toRunStoreError } from './errors.js';
import { METHODS } from './methods.js';

// The wasm throws plain Errors carrying `code` and fields; callers get RunStoreError instances
// they can test with instanceof, the same class the main-thread client rejects with.
for (const method of METHODS) {
  const call = RunStoreCore.prototype[method];
  RunStoreCore.prototype[method] = function (...args) {
    try {
      return call.apply(this, args);
    } catch (error) {
      throw toRunStoreError(error);
    }
  };
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

export { init, RunStoreCore };
export { RunStoreError, ErrorCode } from './errors.js';
// A worker has no navigator.storage.persist(): ask for persistence from the page.
export { storageEstimate } from './storage.js';
