export { default as init, RunStoreCore } from '../pkg/runstore.js';
export * from './types.js';
export { RunStoreError, ErrorCode, ErrorCodeName, storageEstimate } from './index.js';
