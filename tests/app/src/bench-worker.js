// runstore/core in an app's own worker running the SPEC §5 workloads, the baseline of the
// client benchmark (tests/js/bench-client.mjs). `asClient`: each write as the client's worker
// sends it, a one-operation step under a new request id.
import { init, RunStoreCore } from 'runstore/core';
import { runWorkloads, perCall } from './workloads.js';

const OPERATIONS = {
  append: (workflowId, events, expectedSeq) => ({ op: 'append', workflowId, events, expectedSeq }),
  insertOutbox: (rows) => ({ op: 'insertOutbox', rows }),
  claimOutbox: (now, limit, filter) => ({ op: 'claimOutbox', now, limit, filter: filter ?? undefined }),
  completeOutboxBatch: (claims) => ({ op: 'completeOutboxBatch', claims }),
  compareAndSwapCheckpoint: (checkpoint, expectedRevision) => ({ op: 'compareAndSwapCheckpoint', checkpoint, expectedRevision }),
};
const RESULTS = { append: (o) => o.head, insertOutbox: (o) => o.inserted, claimOutbox: (o) => o.rows };

self.onmessage = async ({ data: { name, scale, asClient, ping, n } }) => {
  if (ping) {
    // An empty round trip: what one message each way costs, whatever it carries.
    self.postMessage({ ping });
    return;
  }
  try {
    await init();
    const store = await RunStoreCore.open(name, { persistence: 'opfs' });
    const call = (method, ...args) => {
      if (!asClient || !(method in OPERATIONS)) return store[method](...args);
      const { outcomes } = store.commit({ requestId: crypto.randomUUID(), operations: [OPERATIONS[method](...args)] });
      return RESULTS[method]?.(outcomes[0]);
    };
    // A short run first, so that the timed one finds the code compiled, as the client's does.
    await runWorkloads(call, { prefix: 'warm-', scale: 0.01 });
    if (n) {
      await perCall(call, { prefix: 'warm-', n: 20 });
      const us = await perCall(call, { prefix: '', n });
      await store.close();
      self.postMessage({ ms: us });
      return;
    }
    const ms = await runWorkloads(call, { prefix: '', scale });
    await store.close();
    self.postMessage({ ms });
  } catch (error) {
    self.postMessage({ failed: String(error?.stack ?? error) });
  }
};
