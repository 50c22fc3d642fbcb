// `runstore/core`'s reads in Node (js/core.js): all but the hot ones (a history, a head, a
// checkpoint) go through the wasm's one way in for reads, `__read` (src/wasm/facade_reads.rs),
// which reads each argument as the method's own export did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { init } from '../../js/core.js';
import { METHODS, PARAMETERS } from '../../js/methods.js';
import { WRITES } from '../../js/wire.js';
import { RunStoreError } from '../../js/errors.js';
import { openMemoryStore } from './node-store.mjs';

const isError = (code, field) => (error) => error instanceof RunStoreError && error.code === code && error.field === field;

/** The reads the wasm does not export on their own: its instance's exports (init answers them). */
async function sharedReads() {
  const exports = await init({ module_or_path: readFileSync(new URL('../../pkg/runstore_bg.wasm', import.meta.url)) });
  return METHODS.filter((method) => !WRITES.has(method) && !(`runstorecore_${method}` in exports));
}

test('every read without an export of its own is one the way in reads, its arguments named', async () => {
  const store = await openMemoryStore(`core-reads-${Math.random()}`);
  const shared = await sharedReads();
  assert.ok(shared.includes('listWorkflowIds') && !shared.includes('readHistory') && shared.length >= 30, shared.join());
  // With no arguments each either answers (its parameters are optional) or refuses the first
  // it needs by its name: never the method itself.
  for (const method of shared) {
    try {
      store[method]();
    } catch (error) {
      assert.ok(error instanceof RunStoreError, `${method}: ${error}`);
      assert.equal(error.code, 'INVALID_INPUT', `${method}: ${error.message}`);
      assert.ok(PARAMETERS[method].includes(error.field), `${method} refused ${error.field}`);
    }
  }
  store.append('wf', [{ type: 'custom', name: 'step', recordedAt: 1 }], 0);
  assert.deepEqual(store.listWorkflowIds(), { items: ['wf'], nextCursor: null });
  assert.equal(store.workflowSummary('wf').head, 1);
  assert.deepEqual(store.listVisibility({}, 10), { records: [], nextCursor: null });
  await store.close();
});

test('an argument is refused before a closed store, naming it, as the method did', async () => {
  const store = await openMemoryStore(`core-reads-${Math.random()}`);
  await store.close();
  assert.throws(() => store.getNamespace(5), isError('INVALID_INPUT', 'name'));
  assert.throws(() => store.listVisibility({}, -1), isError('INVALID_INPUT', 'pageSize'));
  assert.throws(() => store.getNamespace('ns'), (error) => error instanceof RunStoreError && error.code === 'BACKEND');
});

test('a name the wasm does not read is refused as such, and a fourth argument is ignored', async () => {
  const store = await openMemoryStore(`core-reads-${Math.random()}`);
  assert.throws(() => store.__read('append', 'wf', [], 0), (error) => error.code === 'INVALID_INPUT' && error.field === 'method');
  assert.deepEqual(store.listTimers({ limit: 1 }, 'more'), { items: [], nextCursor: null });
  assert.equal(store.listTimers.length, 1);
  await store.close();
});
