// Exposes the package to the test driver as an app would import it: by its name, resolved by
// Vite from node_modules (the packed tarball), with no Vite configuration for it.
import { RunStore, RunStoreError, ErrorCode } from 'runstore';
import { readmeExample, expectedOutput } from './readme-example.js';
import { readmeExample as encryptionExample, expectedOutput as encryptionOutput } from './encryption-example.js';
import { runCrashCycles, holdsPlainHeader } from './crash-cycles.js';
import { runEncryptionKilled } from './encrypt-kill.js';
import { runTable, runRepeated, runReadOnce, runBuiltinAttacks, runProperty, snapshot } from './hostile.js';
import { runOnClient } from './parity.js';
import { benchCore, benchOpen, benchClient, benchClientPerCall, benchMessaging } from './bench.js';
import { onMedium, pageMedium } from './medium.js';
import { napLateness, openClient, openTabEngine, runWorkflowCase } from './workflow-cases.js';

const medium = pageMedium();

/**
 * The workers this page starts (the package's store workers among them), live or ended: a test
 * that ends a store worker does it through this list in engines whose driver cannot reach
 * workers (tests/js/browser.mjs, endWorker).
 */
const workers = [];
window.Worker = class extends window.Worker {
  constructor(url, options) {
    super(url, options);
    const entry = { url: String(url), ended: false };
    workers.push(entry);
    this.terminate = () => {
      entry.ended = true;
      super.terminate();
    };
    entry.end = () => this.terminate();
  }
};

/**
 * Posts `message` to `worker` (one of the app's own, just started) and resolves to the one
 * report it posts back, ending it then; `{ failed }` if it does not start.
 */
function reportOf(worker, message) {
  return new Promise((resolve) => {
    worker.onmessage = (event) => {
      worker.terminate();
      resolve(event.data);
    };
    worker.onerror = (event) => resolve({ failed: event.message ?? 'the worker did not start' });
    worker.postMessage(message);
  });
}

const open = RunStore.open.bind(RunStore);
RunStore.open = (name, options) => open(name, onMedium(options, medium));

/**
 * The parity cases (src/parity.js) through runstore/core in an app's own worker and through the
 * main-thread client on `options`; resolves to both lists of outcomes.
 */
async function runParity(name, options) {
  const core = await reportOf(new Worker(new URL('./parity-worker.js', import.meta.url), { type: 'module' }), { name });
  return { core, client: await runOnClient(RunStore, name, options) };
}

// What tests/js/package.test.mjs hands its cases in a page (src/node.js in Node).
window.runstore = { RunStore, RunStoreError, ErrorCode, readmeExample, expectedOutput, runParity, medium, workers };
/** docs/encryption.md's example, and the lines it says it prints. */
window.runstore.encryption = { example: encryptionExample, expected: encryptionOutput };
/** RunStore.open with the options as given, for tests of the persistence options themselves. */
window.runstore.openAsGiven = open;

/** Runs src/core-worker.js (the store used directly in an app's own worker); resolves to its report. */
window.runCoreWorker = () =>
  reportOf(new Worker(new URL('./core-worker.js', import.meta.url), { type: 'module' }), { medium });
/** The client benchmark (tests/js/bench-client.mjs). */
window.bench = { core: benchCore, open: benchOpen, client: benchClient, clientPerCall: benchClientPerCall, messaging: benchMessaging };
/** Terminates a store worker mid-step, cycle after cycle (src/crash-cycles.js). */
window.runCrashCycles = runCrashCycles;
/** Terminates a worker midway through encrypting a store, at each point (src/encrypt-kill.js). */
window.runEncryptionKilled = runEncryptionKilled;
/** Whether a store's stored bytes hold SQLite's plain file header (src/crash-cycles.js). */
window.holdsPlainHeader = holdsPlainHeader;
/** The hostile-input suite through runstore/core in an app's own worker; resolves to its report. */
window.runHostileCore = (options) =>
  reportOf(new Worker(new URL('./hostile-worker.js', import.meta.url), { type: 'module' }), { ...options, medium });

/** The hostile-input suite through the main-thread client; resolves to its report. */
window.runHostileClient = async (options) => {
  const report = { names: {} };
  for (const name of ['memvfs', 'memdb']) {
    try {
      await (await RunStore.open(name, { persistence: 'opfs' })).close();
      report.names[name] = 'opened';
    } catch (error) {
      report.names[name] = { code: error.code, field: error.field };
    }
  }
  const name = `hostile-client-${options.seed}`;
  const store = await RunStore.open(name, { persistence: 'opfs' });
  // One function per store, as in hostile-worker.js (callsOn): never a reassigned variable.
  const call = (method, args) => store[method](...args);
  report.table = await runTable(call, { client: true });
  report.repeated = await runRepeated(call, options.repeat);
  report.readOnce = await runReadOnce(call);
  report.attacks = await runBuiltinAttacks(call, { client: true });
  report.property = await runProperty(call, { ...options, client: true });
  const before = await snapshot(call);
  await store.close();
  const reopened = await RunStore.open(name, { persistence: 'opfs' });
  report.reopened = (await snapshot((method, args) => reopened[method](...args))) === before;
  await reopened.close();
  return report;
};

/**
 * A case of the workflow engine (src/workflow-cases.js) on the page's client, its stores on
 * OPFS (or the page's medium); `onCore` runs in an app's own worker on runstore/core.
 */
window.runWorkflowCase = (name, options) => {
  if (name !== 'onCore') return runWorkflowCase(name, (store) => openClient(store, 'opfs'), options);
  return reportOf(new Worker(new URL('./workflow-worker.js', import.meta.url), { type: 'module' }), { medium });
};

/** Runs the first workflow's page (src/readme-workflows/page.js, extracted from docs/workflows.md by scripts/build-test-app.sh). */
window.runReadmeWorkflows = () => import('./readme-workflows/page.js');

/** This tab's engine on the shared store `name` (the many-tabs test); resolves to whether the tab leads. */
window.openTabEngine = async (name, tabName) => {
  globalThis.tabName = tabName;
  window.tab = await openTabEngine(name);
  return window.tab.store.isLeader;
};
/** How late the leader's durable timers fire for naps started in this tab (`[ms, lateMs]`). */
window.napLateness = (durations, label) => napLateness(window.tab.engine, window.tab.store, durations, label);

/** runstore/workflow with leases on the page's store (src/leases-page.js, tests/js/sync.test.mjs). */
window.leasesPage = () => import('./leases-page.js');
/** runstore/inspector mounted on a store (src/inspector-page.js, tests/js/inspector.test.mjs). */
window.inspectorPage = () => import('./inspector-page.js');
/** runstore/inspector on a sync server's namespace (src/inspector-sync-page.js, tests/js/inspector-sync.test.mjs). */
window.inspectorSyncPage = () => import('./inspector-sync-page.js');
/** runstore/inspector on a store seeded the same way every time (src/inspector-screens.js, tests/js/inspector-screens.test.mjs). */
window.inspectorScreens = () => import('./inspector-screens.js');

document.getElementById('status').textContent = 'ready';
