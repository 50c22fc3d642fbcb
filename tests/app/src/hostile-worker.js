// The hostile-input suite through runstore/core in an app's own worker: the table, the same
// exception thousands of times, values read once, the property test, then close and reopen.
import { init, RunStoreCore } from 'runstore/core';
import { runTable, runRepeated, runReadOnce, runBuiltinAttacks, runProperty, runOpenProperty, snapshot } from './hostile.js';
import { onMedium } from './medium.js';

async function refusedNames(medium) {
  const out = {};
  for (const name of ['memvfs', 'memdb']) {
    try {
      const store = await RunStoreCore.open(name, onMedium({ persistence: 'opfs' }, medium));
      await store.close();
      out[name] = 'opened';
    } catch (error) {
      out[name] = { code: error.code, field: error.field };
    }
  }
  return out;
}

/** How much wasm memory refusing oversized arguments takes: nothing is copied in first. */
function growthFromOversized(store, memory) {
  const before = memory.buffer.byteLength;
  const codes = [];
  for (const call of [
    () => store.head('x'.repeat(256 * 2 ** 20)),
    () => store.putArtifact({ scope: 's', mediaType: 'm', bytes: new Uint8Array(200 * 2 ** 20) }, 0),
    () => store.append('wf', new Array(2 ** 32 - 1), 1),
  ]) {
    try {
      call();
      codes.push('resolved');
    } catch (error) {
      codes.push(error.code);
    }
  }
  return { codes, grownBytes: memory.buffer.byteLength - before };
}

/**
 * Calls `store`'s methods by name. One function per store, never a variable reassigned under
 * a closure: WebKitGTK 2.50 was seen calling through such a closure on the store freed before
 * the reassignment ("null pointer passed to rust"), in about half of the runs.
 */
const callsOn = (store) => async (method, args) => store[method](...args);

self.onmessage = async ({ data }) => {
  try {
    const { memory } = await init();
    const options = onMedium({ persistence: 'opfs' }, data.medium);
    const report = { names: await refusedNames(data.medium) };
    const name = `hostile-core-${data.seed}`;
    const store = await RunStoreCore.open(name, options);
    const call = callsOn(store);
    report.table = await runTable(call, { client: false });
    report.oversized = growthFromOversized(store, memory);
    report.repeated = await runRepeated(call, data.repeat);
    report.readOnce = await runReadOnce(call);
    const open = (name, options) => RunStoreCore.open(name, onMedium(options, data.medium));
    report.attacks = await runBuiltinAttacks(call, { client: false, open, name });
    report.property = await runProperty(call, { ...data, client: false });
    const media = ['memory', 'auto', data.medium ?? 'opfs'];
    report.openProperty = await runOpenProperty((...args) => RunStoreCore.open(...args), { ...data, ms: data.ms / 4, client: false, media });
    const before = await snapshot(call);
    await store.close();
    store.free();
    const reopened = await RunStoreCore.open(name, options);
    report.reopened = (await snapshot(callsOn(reopened))) === before;
    await reopened.close();
    self.postMessage(report);
  } catch (error) {
    self.postMessage({ failed: `${error}\n${error?.stack ?? ''}` });
  }
};
