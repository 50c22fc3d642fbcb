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
    const names = store.readHistory('wf').items.map((event) => event.name);
    await store.close();
    self.postMessage({ head, conflict, busy, names });
  } catch (error) {
    self.postMessage({ failed: `${error}\n${error?.stack ?? ''}` });
  }
};
