// Time to a usable store, runstore/core: a fresh dedicated worker loads the package, its wasm,
// opens a store on OPFS (new, or the one an earlier visit left) and commits one event at `seq`. Posts when each phase ended, as
// `performance.timeOrigin + performance.now()` (milliseconds since the epoch, comparable with
// the page's), then exits.
import { init, RunStoreCore } from 'runstore/core';

const at = () => performance.timeOrigin + performance.now();
const loaded = at();

self.onmessage = async ({ data: { name, seq } }) => {
  try {
    await init();
    const initialized = at();
    const store = await RunStoreCore.open(name, { persistence: 'opfs' });
    const opened = at();
    store.append('startup', [{ type: 'custom', name: 'visit', recordedAt: 1 }], seq);
    const written = at();
    await store.close();
    self.postMessage({ phases: { loaded, initialized, opened, written } });
  } catch (error) {
    self.postMessage({ error: `${error?.code ?? ''} ${error?.stack ?? error}` });
  }
};
