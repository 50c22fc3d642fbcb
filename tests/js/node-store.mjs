// Test support: the package's store itself (`runstore/core`, the wasm in pkg/) in Node, on
// memory, for the tests whose clients need no browser: each client is a RunStoreCore that
// `syncStore` (js/sync.js) syncs, as the main-thread client would in a page.
import { readFileSync } from 'node:fs';
import { init, RunStoreCore } from '../../js/core.js';

let ready = null;

/** A new in-memory store named `name`. */
export async function openMemoryStore(name) {
  ready ??= init({ module_or_path: readFileSync(new URL('../../pkg/runstore_bg.wasm', import.meta.url)) });
  await ready;
  return RunStoreCore.open(name, { persistence: 'memory' });
}

/** Runs `task(i)` for every `i` below `count`, `lanes` at a time. */
export async function inLanes(count, lanes, task) {
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < count) await task(next++);
  }));
}
