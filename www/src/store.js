// Opens the demo's store the way an app does: in the package's dedicated worker, on OPFS where
// the browser has it, else on IndexedDB (`persistence: 'auto'`, the default).

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
      return await RunStore.open(STORE_NAME, { durability: 'full' });
    } catch (error) {
      if (error.code !== 'BUSY' || attempt >= delays.length) throw error;
      onRetry(error);
      await sleep(delays[attempt]);
    }
  }
}

/** The names the package gives a store's storage: an OPFS directory, an IndexedDB database. */
const MEDIA = { opfs: 'OPFS', indexeddb: 'IndexedDB', memory: 'memory' };

/** What the page calls where `store` lives. */
export const mediumName = (store) => MEDIA[store.persistence] ?? store.persistence;

/** Closes the store and deletes its storage (the demo's "reset"). */
export async function deleteStore(store) {
  const persistence = store?.persistence;
  await store?.close();
  if (persistence === 'indexeddb') {
    await new Promise((resolve, reject) => {
      const request = indexedDB.deleteDatabase(`runstore:${STORE_NAME}`);
      request.onsuccess = resolve;
      request.onerror = () => reject(request.error);
    });
    return;
  }
  const root = await navigator.storage.getDirectory();
  try {
    await root.removeEntry(STORE_NAME, { recursive: true });
  } catch (error) {
    if (error.name !== 'NotFoundError') throw error;
  }
}
