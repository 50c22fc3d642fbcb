// The dedicated worker that hosts one store for the main-thread RunStore client. Requests are
// answered strictly in order: each message runs to completion (its commit included) before the
// next starts, so a write is acknowledged only once it is durable.
import { init, RunStoreCore } from './core.js';
import { RunStoreError, serializeError } from './errors.js';
import { METHODS } from './methods.js';

const allowed = new Set(METHODS);
let store = null;
let queue = Promise.resolve();

async function handle(method, args) {
  if (method === 'open') {
    if (store) throw new RunStoreError('INVALID_INPUT', 'this worker has a store open already');
    await init();
    store = await RunStoreCore.open(...args);
    return undefined;
  }
  if (method === 'close') {
    const closing = store;
    store = null;
    if (closing) {
      await closing.close();
      closing.free();
    }
    return undefined;
  }
  if (!allowed.has(method)) {
    throw new RunStoreError('INVALID_INPUT', `unknown method ${String(method)}`, { field: 'method' });
  }
  if (!store) throw new RunStoreError('BACKEND', 'the store is closed');
  return store[method](...args);
}

self.addEventListener('message', (event) => {
  const { id, method, args } = event.data ?? {};
  queue = queue
    .then(() => handle(method, Array.isArray(args) ? args : []))
    .then(
      (value) => self.postMessage({ id, ok: true, value }),
      (error) => self.postMessage({ id, ok: false, error: serializeError(error) }),
    );
});
