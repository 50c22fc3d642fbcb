// The store the Node tests give the saver: a runstore/core memory store (the package finds its
// wasm by itself). Once the package's RunStore runs in-process in Node, this becomes
// `RunStore.open(name, { persistence: 'memory' })`.
import { init, RunStoreCore } from 'runstore/core';
import { RunStoreSaver } from 'runstore/langgraph';

export async function openStore(name) {
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
