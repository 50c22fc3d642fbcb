// The dedicated worker that hosts one store for the main-thread RunStore client: serve.js
// does the work, with this worker's globals.
import { init, RunStoreCore } from './core.js';
import { serve } from './serve.js';

serve(self, { init, RunStoreCore, locks: navigator.locks, BroadcastChannel, storage: navigator.storage });
