// What the engines of a store hear of its commits. A RunStore tells its subscribers of every
// commit, from any tab; a RunStoreCore tells nobody, so there the engines of the process tell
// each other of the commits they make themselves (one listener list per store).

const byStore = new WeakMap();

/** The change notices of `store`, shared by every engine on it. */
export function noticesOf(store) {
  let notices = byStore.get(store);
  if (!notices) {
    notices = new Notices(store);
    byStore.set(store, notices);
  }
  return notices;
}

class Notices {
  #listeners = new Set();
  /** Whether this process must tell of its own commits (the store has no `subscribe`). */
  #tellOwn;

  constructor(store) {
    this.#tellOwn = typeof store.subscribe !== 'function';
    if (!this.#tellOwn) store.subscribe(null, (change) => this.#tell(change));
  }

  /** Calls `listener(change)` on each notice; returns the function that stops it. */
  listen(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A step this process committed: told here when the store does not tell of it. */
  committed(step) {
    if (this.#tellOwn) this.#tell(changeOf(step));
  }

  #tell(change) {
    for (const listener of [...this.#listeners]) listener(change);
  }
}

const AREA_OF = {
  append: 'journal',
  insertOutbox: 'outbox',
  completeOutbox: 'outbox',
  failOutbox: 'outbox',
  retryOutbox: 'outbox',
  claimOutbox: 'outbox',
  scheduleTimer: 'timers',
  cancelTimer: 'timers',
  upsertVisibility: 'visibility',
  compareAndSwapEffect: 'effects',
  compareAndSwapCheckpoint: 'checkpoints',
};

/** A change notice of the parts the engine reads (areas, workflows) for a step it committed. */
function changeOf(step) {
  const areas = new Set();
  const workflowIds = new Set();
  for (const operation of step.operations) {
    if (AREA_OF[operation.op]) areas.add(AREA_OF[operation.op]);
    if (operation.workflowId) workflowIds.add(operation.workflowId);
    if (operation.record?.workflowId) workflowIds.add(operation.record.workflowId);
    for (const row of operation.rows ?? []) workflowIds.add(row.workflowId);
  }
  return { requestId: step.requestId ?? null, areas: [...areas], workflowIds: [...workflowIds], heads: {}, revisions: [] };
}
