// The client benchmark's page side (tests/js/bench-client.mjs): the workloads through
// runstore/core in a worker of the page's own, and through the main-thread client.
import { RunStore } from 'runstore';
import { runWorkloads } from './workloads.js';

/** The workloads on runstore/core in a new worker; resolves to { W1..W5: ms }. */
export function benchCore(options) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./bench-worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = ({ data }) => {
      worker.terminate();
      if (data.failed) reject(new Error(data.failed));
      else resolve(data.ms);
    };
    worker.onerror = (event) => reject(new Error(event.message ?? 'the bench worker did not start'));
    worker.postMessage(options);
  });
}

/** Opens `name` as `window.benchStore` (the leader in the first tab, a follower in the next). */
export async function benchOpen(name, options = {}) {
  window.benchStore = await RunStore.open(name, { persistence: 'opfs', ...options });
  return window.benchStore.isLeader;
}

/** The workloads through `window.benchStore`; resolves to { W1..W5: ms }. */
export function benchClient({ prefix, scale, together }) {
  const store = window.benchStore;
  return runWorkloads((method, ...args) => store[method](...args), { prefix, scale, together });
}
