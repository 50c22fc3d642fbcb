// The saver benchmark in the page: RunStoreSaver on an OPFS store through the main-thread
// client. `window.bench(n, runs, warmup, rounds)` resolves to the workload's figures and the
// store's bytes, one result per round, after the workload at `warmup` checkpoints and one
// graph run, unmeasured.
import { RunStore } from 'runstore';
import { RunStoreSaver } from 'runstore/langgraph';
import { graphWorkload, saverWorkload } from './bench-workload.js';

window.bench = async (n, runs, warmup = 20, rounds = 1) => {
  const store = await RunStore.open(`saver-bench-${Date.now()}`, { persistence: 'opfs' });
  try {
    const saver = new RunStoreSaver(store);
    await saverWorkload(saver, warmup); // warm-up: the wasm, the tables and the JIT, not measured
    await graphWorkload(saver, 1);
    const results = [];
    for (let round = 0; round < rounds; round += 1) {
      const before = await store.storageStats();
      const ops = await saverWorkload(saver, n);
      const after = await store.storageStats();
      const bytes = (after.pageCount - after.freelistCount - (before.pageCount - before.freelistCount)) * after.pageSize;
      results.push({ ...ops, ...(await graphWorkload(saver, runs)), bytesPerCheckpoint: Math.round(bytes / n) });
    }
    return results;
  } finally {
    await store.close();
  }
};
window.benchReady = true;
