// A sync server's namespace for the inspector, read-only. `syncServerStore({ url, token,
// namespace })` keeps a copy of the namespace's journals in a memory store in this page
// (runstore/core), pulled by the package's own sync (js/sync.js), and follows the server's
// change feed (a long-poll) while something subscribes to the copy: an inspector on the page
// does from when it is added until it is removed. The server holds journals only (no
// visibility index, effect ledger or timers), so each workflow pulled gets the visibility record
// runstore/workflow writes for a run another device runs, from its journal, and the list shows
// it. The copy offers the store's reads and none of its writes; the inspector shows it with its
// actions off (exports excepted: they change nothing on the server) and tells its sync's
// failures, a token the server refuses (UNAUTHORIZED) among them.
//
// The store, the sync and the engine's record are imported when the first copy is made: an app
// that only shows its own store loads none of them with the inspector.
import { toRunStoreError } from './errors.js';
import { coreStore } from './inspector-core.js';
import { METHODS, WRITE_RESULTS } from './methods.js';

/** Writes that are not in WRITE_RESULTS (whole steps, the file, upkeep): not offered either. */
const OTHER_WRITES = new Set(['commit', 'importDatabase', 'vacuum']);

/**
 * A read-only copy of namespace `namespace` of the sync server at `url`, read with `token`:
 * the store's read methods, `subscribe`, `subscribeSync(callback)` (the sync's progress, as
 * `store.sync`'s `onProgress` hears it; a subscriber that comes after a failed pass hears that
 * failure at once), `server` (`{ url, namespace }`), `readOnly: true` and `stop()`.
 * Rejects with INVALID_INPUT naming `options.<field>` for bad options; everything the server
 * answers later goes to `subscribeSync`.
 */
export async function syncServerStore(options) {
  const [{ init, RunStoreCore }, { readOptions, syncStore }, { elsewhereRecord }] = await Promise.all([
    import('./core.js'),
    import('./sync.js'),
    import('./workflow-engine.js'),
  ]);
  const { url, token, namespace, fetch } = readOptions(options);
  await init();
  const core = await RunStoreCore.open(`runstore-inspector:${namespace}@${url}`, { persistence: 'memory' });
  const copy = coreStore(core);
  const progress = progressOf();
  // The visibility record of each workflow pulled, one after another (each reads the journal
  // as it is then, so the last one written is of the last pull).
  let shown = Promise.resolve();
  const show = async (workflowId) => {
    try {
      core.upsertVisibility(await elsewhereRecord(core, workflowId, core.workflowSummary(workflowId)));
    } catch (error) {
      progress.tell({ type: 'error', error: toRunStoreError(error) });
    }
    copy.changed({ areas: ['journal', 'visibility'], workflowIds: [workflowId] });
  };
  const onProgress = (report) => {
    if (report.type === 'pulled') shown = shown.then(() => show(report.workflowId));
    progress.tell(report);
  };
  // On the core itself, whose pulls tell no one: the live sync would take them for local
  // appends and pass again.
  const follow = follower((signal) => syncStore(core, { url, token, namespace, fetch, live: true, signal, onProgress }), progress.tell);

  const store = {
    readOnly: true,
    server: { url, namespace },
    persistence: core.persistence,
    subscribe(filter, callback) {
      const unsubscribe = copy.subscribe(filter, callback);
      const release = follow.hold();
      return () => {
        unsubscribe();
        release();
      };
    },
    subscribeSync: progress.subscribe,
    /** Ends following the server for good; resolves once the long-poll ended. The copy stays readable. */
    async stop() {
      await follow.stop();
      await shown;
    },
  };
  for (const method of METHODS) {
    if (!(method in WRITE_RESULTS) && !OTHER_WRITES.has(method)) store[method] = copy[method];
  }
  return store;
}

/**
 * The sync's progress reports and their subscribers; one who subscribes after a failed pass
 * (and before a pass that went through) hears that failure at once.
 */
function progressOf() {
  const callbacks = new Set();
  let failure = null;
  const call = (callback, report) => {
    try {
      callback(report);
    } catch (error) {
      // One subscriber's failure must not keep the others from hearing, nor stop the sync.
      setTimeout(() => {
        throw error;
      });
    }
  };
  return {
    tell(report) {
      if (report.type === 'error') failure = report;
      if (report.type === 'synced') failure = null;
      for (const callback of callbacks) call(callback, report);
    },
    subscribe(callback) {
      callbacks.add(callback);
      if (failure) call(callback, failure);
      return () => callbacks.delete(callback);
    },
  };
}

/**
 * Runs `sync(signal)` (a live sync) while held at least once, one run at a time: the last
 * release aborts it, the next hold starts it again once that run ended. A run that throws is
 * told to `tell` as an error.
 */
function follower(sync, tell) {
  let holders = 0;
  let running = null;
  let ended = Promise.resolve();
  let stopped = false;
  const pause = () => {
    running?.abort();
    running = null;
  };
  return {
    hold() {
      holders += 1;
      if (!running && !stopped) {
        const { signal } = (running = new AbortController());
        ended = ended.then(() => signal.aborted || sync(signal)).catch((error) => tell({ type: 'error', error: toRunStoreError(error) }));
      }
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        holders -= 1;
        if (holders === 0) pause();
      };
    },
    async stop() {
      stopped = true;
      pause();
      await ended;
    },
  };
}
