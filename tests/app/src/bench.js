// The client benchmark's page side (tests/js/bench-client.mjs): the workloads through
// runstore/core in a worker of the page's own, and through the main-thread client.
import { RunStore } from 'runstore';
import { runWorkloads, perCall } from './workloads.js';

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

/** Microseconds per call through `window.benchStore` (see perCall in workloads.js). */
export async function benchClientPerCall({ prefix, n }) {
  const store = window.benchStore;
  const call = (method, ...args) => store[method](...args);
  await perCall(call, { prefix: `${prefix}warm-`, n: 20 });
  return perCall(call, { prefix, n });
}

/**
 * What the messages themselves cost, in µs: an empty round trip to a worker (`ping`), and
 * structuredClone on this thread of 100 events and of a page of 500 (`clone100`, `clone500`).
 */
export async function benchMessaging(n) {
  const worker = new Worker(new URL('./bench-worker.js', import.meta.url), { type: 'module' });
  const once = (i) =>
    new Promise((resolve) => {
      worker.onmessage = resolve;
      worker.postMessage({ ping: i + 1 });
    });
  for (let i = 0; i < 20; i++) await once(i);
  let started = performance.now();
  for (let i = 0; i < n; i++) await once(i);
  const ping = ((performance.now() - started) * 1000) / n;
  worker.terminate();
  const text = 'x'.repeat(150);
  const events = (count) => Array.from({ length: count }, (_, i) => ({ type: 'custom', name: 'bench', recordedAt: i, data: { i, text } }));
  const cloneUs = (value) => {
    for (let i = 0; i < 20; i++) structuredClone(value);
    started = performance.now();
    for (let i = 0; i < n; i++) structuredClone(value);
    return ((performance.now() - started) * 1000) / n;
  };
  return { ping, clone100: cloneUs(events(100)), clone500: cloneUs({ items: events(500), nextCursor: null }) };
}
