// Exposes the package to the test driver as an app would import it: by its name, resolved by
// Vite from node_modules (the packed tarball), with no Vite configuration for it.
import { RunStore, RunStoreError, ErrorCode } from 'runstore';
import { readmeExample, expectedOutput } from './readme-example.js';
import { runCrashCycles } from './crash-cycles.js';

window.runstore = { RunStore, RunStoreError, ErrorCode, readmeExample, expectedOutput };

/** Runs src/core-worker.js (the store used directly in an app's own worker); resolves to its report. */
window.runCoreWorker = () =>
  new Promise((resolve) => {
    const worker = new Worker(new URL('./core-worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = (event) => {
      worker.terminate();
      resolve(event.data);
    };
    worker.onerror = (event) => resolve({ failed: event.message ?? 'the worker did not start' });
    worker.postMessage('run');
  });
/** Terminates a store worker mid-step, cycle after cycle (src/crash-cycles.js). */
window.runCrashCycles = runCrashCycles;
document.getElementById('status').textContent = 'ready';
