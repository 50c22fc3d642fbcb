// The origin's storage, for apps: how much it uses and may use, and a request to keep it.
// Storage belongs to the origin, not to one store, so these are functions, not methods.
import { RunStoreError } from './errors.js';

/**
 * The origin's storage use and quota in bytes (every store's OPFS files included). Works on a
 * page and in workers.
 * @returns {Promise<import('./types').StorageEstimate>}
 */
export async function storageEstimate() {
  const storage = globalThis.navigator?.storage;
  if (typeof storage?.estimate !== 'function') {
    throw new RunStoreError('OPFS_UNAVAILABLE', 'this context has no navigator.storage.estimate()');
  }
  const { usage = 0, quota = 0 } = await storage.estimate();
  return { usage, quota };
}

/**
 * Asks the browser to keep the origin's storage under pressure instead of evicting it; resolves
 * to whether it will. `navigator.storage.persist()` exists only on a page, not in workers.
 * @returns {Promise<boolean>}
 */
export async function requestPersistence() {
  const storage = globalThis.navigator?.storage;
  if (typeof storage?.persist !== 'function') {
    throw new RunStoreError('OPFS_UNAVAILABLE', 'navigator.storage.persist() exists only on a page (Window), not in workers');
  }
  return storage.persist();
}
