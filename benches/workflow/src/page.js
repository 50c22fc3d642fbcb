// The benchmark page: the main-thread RunStore client (a shared store on OPFS, its worker the
// package's own), runstore/core in a worker of the page, and the official SQLite wasm build in
// another. The driver (run.mjs) calls `window.bench.measure(...)` and `window.bench.replay(...)`
// one at a time.
import { RunStore } from 'runstore';
import { engineSide, handSide, measure, measureReplay } from './workload.js';

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
  worker.onerror = (event) => {
    for (const call of pending.values()) call.reject(new Error(`the worker failed: ${event.message}`));
    pending.clear();
  };
  return (request) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...request });
    });
}

// Written out in full so that Vite finds and bundles both workers.
const core = workerSide(new Worker(new URL('./core-worker.js', import.meta.url), { type: 'module' }));
const official = workerSide(new Worker(new URL('./official-worker.js', import.meta.url), { type: 'module' }));

/** Removes a closed runstore store's OPFS files: its pool directory and its reserve. */
async function removeStore(name) {
  const root = await navigator.storage.getDirectory();
  await root.removeEntry(name, { recursive: true }).catch(() => {});
  const reserve = await root.getDirectoryHandle('.runstore-reserve').catch(() => null);
  await reserve?.removeEntry(name).catch(() => {});
}

/** A side on the page's client: a shared store on OPFS at `durability`. */
async function onClient(makeSide, { durability, count, lanes, name }) {
  const store = await RunStore.open(name, { persistence: 'opfs', durability });
  try {
    const side = await makeSide(store);
    const result = await measure(side.runOne, { count, lanes, prefix: name });
    await side.close();
    return result;
  } finally {
    await store.close();
  }
}

const SIDES = {
  'engine-client': (request) => onClient(engineSide, request),
  'hand-client': (request) => onClient(handSide, request),
  'engine-core': (request) => core({ ...request, kind: 'engine' }),
  'hand-core': (request) => core({ ...request, kind: 'hand' }),
  official: (request) => official(request),
};

// Chromium runs this page with --js-flags=--expose-gc and --enable-precise-memory-info (run.mjs):
// a full GC (twice, for what the first one's finalizers release) and the heap's exact size.
const memory = {
  gc: async () => {
    window.gc();
    await new Promise((resolve) => setTimeout(resolve, 0));
    window.gc();
  },
  heap: () => performance.memory.usedJSHeapSize,
};

window.bench = {
  async measure(side, durability, count, lanes, name) {
    const result = await SIDES[side]({ durability, count, lanes, name });
    if (side !== 'official') await removeStore(name);
    return result;
  },
  /** A replay on the page's client, on OPFS at durability `full`. */
  async replay(steps, name) {
    const store = await RunStore.open(name, { persistence: 'opfs', durability: 'full' });
    try {
      return await measureReplay(store, steps, `${name}-run`, memory);
    } finally {
      await store.close();
      await removeStore(name);
    }
  },
};
window.benchReady = true;
