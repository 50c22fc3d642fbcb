// The hostile-input suite through runstore/core in an app's own worker: the table, the same
// exception thousands of times, values read once, the property test, then close and reopen.
import { init, RunStoreCore } from 'runstore/core';
import { runTable, runRepeated, runReadOnce, runBuiltinAttacks, runProperty, runOpenProperty, snapshot } from './hostile.js';

async function refusedNames() {
  const out = {};
  for (const name of ['memvfs', 'memdb']) {
    try {
      const store = await RunStoreCore.open(name, { persistence: 'opfs' });
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

self.onmessage = async ({ data }) => {
  try {
    const { memory } = await init();
    const report = { names: await refusedNames() };
    const name = `hostile-core-${data.seed}`;
    let store = await RunStoreCore.open(name, { persistence: 'opfs' });
    const call = async (method, args) => store[method](...args);
    report.table = await runTable(call, { client: false });
    report.oversized = growthFromOversized(store, memory);
    report.repeated = await runRepeated(call, data.repeat);
    report.readOnce = await runReadOnce(call);
    const open = (...args) => RunStoreCore.open(...args);
    report.attacks = await runBuiltinAttacks(call, { client: false, open, name });
    report.property = await runProperty(call, { ...data, client: false });
    report.openProperty = await runOpenProperty((...args) => RunStoreCore.open(...args), { ...data, ms: data.ms / 4, client: false });
    const before = await snapshot(call);
    await store.close();
    store.free();
    store = await RunStoreCore.open(name, { persistence: 'opfs' });
    report.reopened = (await snapshot(call)) === before;
    await store.close();
    self.postMessage(report);
  } catch (error) {
    self.postMessage({ failed: String(error?.stack ?? error) });
  }
};
