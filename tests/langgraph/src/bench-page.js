// The saver benchmark in the page: RunStoreSaver on an OPFS store through the main-thread
// client. `window.bench(n, runs)` resolves to the workload's figures and the store's bytes.
import { RunStore } from 'runstore';
import { RunStoreSaver } from 'runstore/langgraph';
import { graphWorkload, saverWorkload } from './bench-workload.js';

window.bench = async (n, runs) => {
  const store = await RunStore.open(`saver-bench-${Date.now()}`, { persistence: 'opfs' });
  try {
    const saver = new RunStoreSaver(store);
    await saverWorkload(saver, 20); // warm-up: the wasm and the JIT, not measured
    const before = await store.storageStats();
    const ops = await saverWorkload(saver, n);
    const after = await store.storageStats();
    const bytes = (after.pageCount - after.freelistCount - (before.pageCount - before.freelistCount)) * after.pageSize;
    return { ...ops, ...(await graphWorkload(saver, runs)), bytesPerCheckpoint: Math.round(bytes / n) };
  } finally {
    await store.close();
  }
};
window.benchReady = true;
