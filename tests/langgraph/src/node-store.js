// The store the Node tests give the saver: a runstore/core memory store (the package finds its
// wasm by itself). Once the package's RunStore runs in-process in Node, this becomes
// `RunStore.open(name, { persistence: 'memory' })`.
import { init, RunStoreCore } from 'runstore/core';

export async function openStore(name) {
  await init();
  return RunStoreCore.open(name, { persistence: 'memory' });
}
