// The benchmark page: one dedicated worker for runstore/core and one for the official build,
// kept for the whole session, and the main-thread RunStore client. The driver (run.mjs) calls
// `window.bench.measure(side, setup, workload, scale, name)` one measurement at a time.
import { RunStore } from 'runstore';
import { measure, storeOptions } from './workloads.js';

/** Calls into a worker that answers each { id, ...request } with { id, result } or { id, error }. */
function workerSide(worker) {
  const pending = new Map();
  let nextId = 1;
  worker.onmessage = ({ data }) => {
    const call = pending.get(data.id);
    pending.delete(data.id);
    if (data.error) call.reject(new Error(data.error));
    else call.resolve(data.result);
  };
  // A worker that failed (or never loaded) fails every call, now and later, instead of hanging.
  let failure = null;
  worker.onerror = (event) => {
    failure = new Error(`the worker failed: ${event.message ?? 'it did not load'}`);
    for (const call of pending.values()) call.reject(failure);
    pending.clear();
  };
  return (request) =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...request });
    });
}

// Written out in full so that Vite finds and bundles both workers.
const core = workerSide(new Worker(new URL('./core-worker.js', import.meta.url), { type: 'module' }));
const official = workerSide(new Worker(new URL('./official-worker.js', import.meta.url), { type: 'module' }));

function client({ setup, workload, scale, name }, exclusive = false) {
  const options = { ...storeOptions(setup), ...(setup === 'memory' ? {} : { exclusive }) };
  return measure(
    workload,
    scale,
    () => RunStore.open(name, options),
    (store) => store.close(),
  );
}

/**
 * Removes a closed runstore store's storage: its IndexedDB database, or its OPFS files (its
 * pool directory and its reserve).
 */
async function removeStore(setup, name) {
  if (setup.startsWith('indexeddb')) {
    await new Promise((resolve, reject) => {
      const request = indexedDB.deleteDatabase(`runstore:${name}`);
      request.onsuccess = resolve;
      request.onerror = () => reject(request.error);
    });
    return;
  }
  const root = await navigator.storage.getDirectory();
  await root.removeEntry(name, { recursive: true }).catch(() => {});
  const reserve = await root.getDirectoryHandle('.runstore-reserve').catch(() => null);
  await reserve?.removeEntry(name).catch(() => {});
}

const SIDES = {
  core,
  official: (request) => official({ ...request, schema: 'store' }),
  plain: (request) => official({ ...request, schema: 'plain' }),
  client,
  exclusive: (request) => client(request, true),
};

const echo = new Worker(new URL('./echo-worker.js', import.meta.url), { type: 'module' });

/**
 * A bare worker postMessage round trip, awaited one after the other as the workloads await
 * their calls: resolves to the microseconds each took, the floor under a client call. The
 * message has the shape of a small client call.
 */
async function postMessageRoundTrip(calls) {
  const roundTrip = (id) =>
    new Promise((resolve) => {
      echo.onmessage = resolve;
      echo.postMessage({ id, method: 'head', args: ['workflow-0001'] });
    });
  await roundTrip(0);
  const started = performance.now();
  for (let id = 1; id <= calls; id++) await roundTrip(id);
  return ((performance.now() - started) * 1000) / calls;
}

/**
 * Time to a usable store from nothing loaded in a worker: a new worker (startup-core.js,
 * startup-official.js) or, for the client, `RunStore.open` from the page (its own worker
 * started by it). `visit` is 'first' (a new store, kept) or 'returning' (the store the first
 * visit left, removed after). Resolves to milliseconds from the start to the end of each phase.
 */
async function startup(side, name, visit) {
  const at = () => performance.timeOrigin + performance.now();
  const keep = visit === 'first';
  const started = at();
  if (side === 'client') {
    const store = await RunStore.open(name, { persistence: 'opfs', exclusive: true });
    const opened = at();
    await store.append('startup', [{ type: 'custom', name: visit, recordedAt: 1 }], keep ? 0 : 1);
    const written = at();
    await store.close();
    if (!keep) await removeStore('opfs', name);
    return { opened: opened - started, written: written - started };
  }
  // Written out in full so that Vite finds and bundles both workers.
  const worker = side === 'core'
    ? new Worker(new URL('./startup-core.js', import.meta.url), { type: 'module' })
    : new Worker(new URL('./startup-official.js', import.meta.url), { type: 'module' });
  const answer = await new Promise((resolve) => {
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (event) => resolve({ error: event.message ?? 'the worker did not load' });
    worker.postMessage({ name, keep, seq: keep ? 0 : 1 });
  });
  worker.terminate();
  if (answer.error) throw new Error(answer.error);
  if (side === 'core' && !keep) await removeStore('opfs', name);
  return Object.fromEntries(Object.entries(answer.phases).map(([phase, time]) => [phase, time - started]));
}

window.bench = {
  postMessageRoundTrip,
  startup,
  async measure(side, setup, workload, scale, name) {
    const result = await SIDES[side]({ setup, workload, scale, name });
    if (side !== 'official' && side !== 'plain' && setup !== 'memory') await removeStore(setup, name);
    return result;
  },
};
window.benchReady = true;
