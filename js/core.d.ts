import type { InitInput, InitOutput } from '../pkg/runstore.js';
export { RunStoreCore } from '../pkg/runstore.js';
export * from './types.js';
export { RunStoreError, ErrorCode, ErrorCodeName, storageEstimate } from './index.js';

/**
 * Loads the store's wasm once; call it before `RunStoreCore.open`. Without an argument the
 * package finds its own wasm: fetched next to the module in a browser or worker, read from the
 * package's folder in Node (and wherever the module is a `file:` URL). An argument (bytes, a
 * URL, a Response, a compiled module) is used as given.
 */
export declare function init(
  moduleOrPath?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>,
): Promise<InitOutput>;
