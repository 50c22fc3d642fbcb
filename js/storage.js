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
    const server = serverRuntime();
    throw new RunStoreError(
      'OPFS_UNAVAILABLE',
      server
        ? `storageEstimate() reads a browser origin's storage (navigator.storage.estimate()), which ${server} does not have: its stores live in memory`
        : 'this context has no navigator.storage.estimate()',
    );
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
    const server = serverRuntime();
    throw new RunStoreError(
      'OPFS_UNAVAILABLE',
      server
        ? `requestPersistence() asks a browser to keep the origin's storage (navigator.storage.persist()), which ${server} does not have: its stores live in memory`
        : typeof globalThis.WorkerGlobalScope === 'function'
          ? 'navigator.storage.persist() exists only on a page (Window), not in workers'
          : 'this context has no navigator.storage.persist()',
    );
  }
  return storage.persist();
}

/** The server runtime this is, with its version (`Node.js v20.19.0`), or null (a browser). */
function serverRuntime() {
  const versions = globalThis.process?.versions;
  if (typeof globalThis.Deno?.version?.deno === 'string') return `Deno ${globalThis.Deno.version.deno}`;
  if (typeof versions?.bun === 'string') return `Bun ${versions.bun}`;
  if (typeof versions?.node === 'string') return `Node.js v${versions.node}`;
  return null;
}
