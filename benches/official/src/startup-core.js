// Time to a usable store, runstore/core: a fresh dedicated worker loads the package, its wasm,
// opens a store on OPFS and commits one event. Posts when each phase ended, as
// `performance.timeOrigin + performance.now()` (milliseconds since the epoch, comparable with
// the page's), then exits.
import { init, RunStoreCore } from 'runstore/core';

const at = () => performance.timeOrigin + performance.now();
const loaded = at();

self.onmessage = async ({ data: { name } }) => {
  try {
    await init();
    const initialized = at();
    const store = await RunStoreCore.open(name, { persistence: 'opfs' });
    const opened = at();
    store.append('startup', [{ type: 'custom', name: 'first', recordedAt: 1 }], 0);
    const written = at();
    await store.close();
    self.postMessage({ phases: { loaded, initialized, opened, written } });
  } catch (error) {
    self.postMessage({ error: `${error?.code ?? ''} ${error?.stack ?? error}` });
  }
};
