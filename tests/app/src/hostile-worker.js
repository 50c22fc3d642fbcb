// The hostile-input suite through runstore/core in an app's own worker: the table, the same
// exception thousands of times, values read once, the property test, then close and reopen.
import { init, RunStoreCore } from 'runstore/core';
import { runTable, runRepeated, runReadOnce, runProperty, snapshot } from './hostile.js';

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

self.onmessage = async ({ data }) => {
  try {
    await init();
    const report = { names: await refusedNames() };
    const name = `hostile-core-${data.seed}`;
    let store = await RunStoreCore.open(name, { persistence: 'opfs' });
    const call = async (method, args) => store[method](...args);
    report.table = await runTable(call, { client: false });
    report.repeated = await runRepeated(call, data.repeat);
    report.readOnce = await runReadOnce(call);
    report.property = await runProperty(call, { ...data, client: false });
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
