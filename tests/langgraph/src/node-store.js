// The store the Node tests give the saver: the package's RunStore on memory, which in Node runs
// the store in the process (the package finds its wasm by itself), as an app's server code or
// unit tests open it.
import { RunStore } from 'runstore';
import { init, RunStoreCore } from 'runstore/core';
import { RunStoreSaver } from 'runstore/langgraph';

export function openStore(name) {
  return RunStore.open(name, { persistence: 'memory' });
}

/** A runstore/core memory store (synchronous methods): the benchmark measures the saver on the store itself. */
export async function openCoreStore(name) {
  await init();
  return RunStoreCore.open(name, { persistence: 'memory' });
}

/**
 * The validation package's initializer: each checkpointer it creates is a RunStoreSaver on a
 * store of its own (named `label-N`), closed when the suite destroys it.
 */
export function saverInitializer(label) {
  let opened = 0;
  return {
    checkpointerName: 'runstore',
    async createCheckpointer() {
      opened += 1;
      return new RunStoreSaver(await openStore(`${label}-${opened}`));
    },
    async destroyCheckpointer(saver) {
      await saver.store.close();
    },
  };
}
