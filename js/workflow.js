// runstore/workflow: durable workflows as code, on the store. A workflow is an async function
// whose steps, timers, signals and children the engine records in the store as it goes and
// replays after a reload, a crash or a hand-over to another tab.
export { defineWorkflow, FatalError } from './workflow-define.js';
export { WorkflowEngine } from './workflow-engine.js';
export { WorkflowHandle } from './workflow-handle.js';
export { RunStoreError, ErrorCode } from './errors.js';
