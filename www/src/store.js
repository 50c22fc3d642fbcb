// Opens the demo's store the way an app does: on OPFS, in the package's dedicated worker.

import { RunStore } from 'runstore';

export const STORE_NAME = 'runstore-demo';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens the store. Another tab holding it makes `RunStore.open` fail with BUSY at once; right
 * after a reload the previous page's worker may still be letting go, so BUSY is retried twice
 * (about a second in all) before it is reported. Never an unbounded wait.
 */
export async function openStore({ onRetry = () => {} } = {}) {
  const delays = [300, 700];
  for (let attempt = 0; ; attempt++) {
    try {
      return await RunStore.open(STORE_NAME, { persistence: 'opfs', durability: 'full' });
    } catch (error) {
      if (error.code !== 'BUSY' || attempt >= delays.length) throw error;
      onRetry(error);
      await sleep(delays[attempt]);
    }
  }
}

/** Closes the store and deletes its OPFS directory (the demo's "reset"). */
export async function deleteStore(store) {
  await store?.close();
  const root = await navigator.storage.getDirectory();
  try {
    await root.removeEntry(STORE_NAME, { recursive: true });
  } catch (error) {
    if (error.name !== 'NotFoundError') throw error;
  }
}
