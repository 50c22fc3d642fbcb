// runstore/core in the app's own dedicated worker: runs one workload per message and answers
// with its timing. The module and its wasm load once; every workload gets a fresh store.
import { init, RunStoreCore } from 'runstore/core';
import { measure } from './workloads.js';

const ready = init();

self.onmessage = async ({ data: { id, setup, workload, scale, name } }) => {
  try {
    await ready;
    const options =
      setup === 'memory' ? { persistence: 'memory' } : { persistence: 'opfs', durability: setup.slice('opfs-'.length) };
    const result = await measure(
      workload,
      scale,
      () => RunStoreCore.open(name, options),
      (store) => store.close(),
    );
    self.postMessage({ id, result });
  } catch (error) {
    self.postMessage({ id, error: `${error?.code ?? ''} ${error?.stack ?? error}` });
  }
};
