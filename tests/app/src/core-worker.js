// An app's own dedicated worker using the store directly through `runstore/core`.
import { init, RunStoreCore, RunStoreError } from 'runstore/core';
import { onMedium } from './medium.js';

function describe(error) {
  return {
    isError: error instanceof Error,
    isRunStoreError: error instanceof RunStoreError,
    code: error.code,
    expected: error.expected,
    actual: error.actual,
  };
}

self.onmessage = async ({ data: { medium } }) => {
  const options = onMedium({ persistence: 'opfs' }, medium);
  try {
    await init();
    const store = await RunStoreCore.open('core-test', options);
    const head = store.append('wf', [{ type: 'custom', name: 'first', recordedAt: 1 }], 0);
    let conflict = null;
    try {
      store.append('wf', [{ type: 'custom', name: 'stale', recordedAt: 2 }], 0);
    } catch (error) {
      conflict = describe(error);
    }
    let busy = null;
    try {
      await RunStoreCore.open('core-test', options);
    } catch (error) {
      busy = describe(error);
    }
    // A real trap in the store's wasm: a call on a store whose pointer lies past the end of
    // wasm memory reads out of bounds, before anything is written.
    let trap = null;
    try {
      const outOfBounds = Object.create(RunStoreCore.prototype);
      outOfBounds.__wbg_ptr = 0xffff_fff0;
      outOfBounds.head('wf');
    } catch (error) {
      trap = { ...describe(error), trapped: error.trapped, message: error.message };
    }
    const names = store.readHistory('wf').items.map((event) => event.name);
    await store.close();
    self.postMessage({ head, conflict, busy, trap, names });
  } catch (error) {
    self.postMessage({ failed: `${error}\n${error?.stack ?? ''}` });
  }
};
