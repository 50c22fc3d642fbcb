// runstore/core in an app's own worker, running the parity cases (parity.js) on a fresh store.
import { init, RunStoreCore } from 'runstore/core';
import { runCases } from './parity.js';

self.onmessage = async ({ data: { name } }) => {
  try {
    await init();
    const store = await RunStoreCore.open(name, { persistence: 'memory' });
    const outcomes = await runCases(async (method, args) => store[method](...args));
    await store.close();
    self.postMessage({ outcomes });
  } catch (error) {
    self.postMessage({ failed: String(error?.stack ?? error) });
  }
};
