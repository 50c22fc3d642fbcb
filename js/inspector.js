// runstore/inspector: `<runstore-inspector>`, a custom element that shows what a store holds
// (workflows, a run's timeline, the effect ledger, the outbox, timers, checkpoints, artifacts,
// conversations, change notices, sync) and acts on it after asking (signal, cancel, requeue,
// purge, export). Importing it defines the element where there is a DOM; in Node or a worker
// it defines nothing and only the adapters (runstore/core, a sync server) are of use.
import { RunStoreInspector } from './inspector-element.js';

export { RunStoreInspector };
export { coreStore, exposeCore, connectCore } from './inspector-core.js';
export { syncServerStore } from './inspector-server.js';

if (globalThis.customElements && !globalThis.customElements.get('runstore-inspector')) {
  globalThis.customElements.define('runstore-inspector', RunStoreInspector);
}
