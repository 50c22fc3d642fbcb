// The store itself, for code that runs in its own dedicated worker: call `await init()` once,
// then `await RunStoreCore.open(name, options)`. Methods are synchronous and throw an Error
// with `.code`.
export { default as init, RunStoreCore } from '../pkg/runstore.js';
export { RunStoreError, ErrorCode } from './errors.js';
