// runstore/core in the app's own dedicated worker: runs one workload per message and answers
// with its timing. The module and its wasm load once; every workload gets a fresh store.
import { init, RunStoreCore } from 'runstore/core';
import { measure, storeOptions } from './workloads.js';

const ready = init();

/**
 * On IndexedDB a write is acknowledged once `flush()` has stored it, as the client's worker
 * does before it answers: each call that leaves a write not stored awaits its flush.
 */
function flushingEachWrite(store) {
  return new Proxy(store, {
    get(target, key) {
      const value = target[key];
      if (typeof value !== 'function') return value;
      if (key === 'close' || key === 'flush') return value.bind(target);
      return async (...args) => {
        const result = value.apply(target, args);
        if (target.__unflushed()) await target.flush();
        return result;
      };
    },
  });
}

self.onmessage = async ({ data: { id, setup, workload, scale, name } }) => {
  try {
    await ready;
    const options = storeOptions(setup);
    const open = async () => {
      const store = await RunStoreCore.open(name, options);
      return options.persistence === 'indexeddb' ? flushingEachWrite(store) : store;
    };
    const result = await measure(workload, scale, open, (store) => store.close());
    self.postMessage({ id, result });
  } catch (error) {
    self.postMessage({ id, error: `${error?.code ?? ''} ${error?.stack ?? error}` });
  }
};
