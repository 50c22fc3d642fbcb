// runstore/core for the inspector. The inspector reads a store as a RunStore: every method
// returns a Promise, and `subscribe` tells of each commit. A RunStoreCore answers at once and
// tells nobody; `coreStore(core)` wraps it: its methods in promises, and change notices for
// the writes made through the wrapper and for those of the runstore/workflow engines on the
// same core (which tell each other of their commits). A write the app makes on the core
// itself is told with `changed()`.
//
// Where the core lives in a worker and the inspector in a page, `exposeCore(core, port)` in
// the worker and `connectCore(port)` in the page carry the calls, the notices and the engine's
// signal and cancel over a MessagePort (or the worker itself).
import { Changes } from './changes.js';
import { RunStoreError, serializeError, toRunStoreError } from './errors.js';
import { AREAS, METHODS, PARAMETERS, WRITE_RESULTS } from './methods.js';
import { noticesOf } from './workflow-notices.js';

/** The area each write touches (what the store's own notices would name). */
const AREA = {
  append: ['journal'],
  appendWithOutbox: ['journal', 'outbox'],
  scheduleTimer: ['timers'],
  cancelTimer: ['timers'],
  compareAndSwapCheckpoint: ['checkpoints'],
  compareAndSwapEffect: ['effects'],
  upsertVisibility: ['visibility'],
  recordRunEvent: ['runJournal'],
  saveConversation: ['conversations'],
  putArtifact: ['artifacts'],
  deleteArtifact: ['artifacts'],
  purgeExpiredArtifacts: ['artifacts'],
  purgeWorkflows: ['journal', 'outbox', 'timers', 'visibility'],
  registerNamespace: ['namespaces'],
  putNamespace: ['namespaces'],
  setNamespacePlacement: ['namespaces'],
  deprecateNamespace: ['namespaces'],
  putPackage: ['packages'],
  putPackageForTypes: ['packages'],
  deletePackage: ['packages'],
  setPackageRoute: ['packages'],
  saveSync: [],
};
const areasOf = (op) => AREA[op] ?? (/outbox|claim/i.test(op) ? ['outbox'] : []);

/** What a revision-carrying write names (checkpoint, effect, conversation), from its record. */
function revisionOf(op, value) {
  if (op === 'compareAndSwapCheckpoint' && value?.checkpointId) return { kind: 'checkpoint', id: value.checkpointId, revision: value.revision };
  if (op === 'compareAndSwapEffect' && value?.effectId) return { kind: 'effect', id: value.effectId, revision: value.revision };
  if (op === 'saveConversation' && value?.conversationId) return { kind: 'conversation', id: value.conversationId, revision: value.revision };
  return null;
}

/** The change notice of operations `[{ op, workflowId?, record?, rows?, checkpoint?, state? }]`. */
function changeOf(operations, requestId = null) {
  const areas = new Set();
  const workflowIds = new Set();
  const revisions = [];
  for (const o of operations) {
    for (const area of areasOf(o.op)) areas.add(area);
    if (o.op === 'append' && o.outbox?.length) areas.add('outbox');
    for (const id of [o.workflowId, o.record?.workflowId, ...(o.rows ?? []).map((r) => r.workflowId)]) if (typeof id === 'string') workflowIds.add(id);
    const revision = revisionOf(o.op, o.checkpoint ?? o.record ?? o.state);
    if (revision) revisions.push(revision);
  }
  return { requestId, areas: [...areas], workflowIds: [...workflowIds], heads: {}, revisions };
}

/** A single write method's call as the operation it is. */
function operationOf(method, args) {
  const operation = { op: method === 'appendWithOutbox' || method === 'putPackageForTypes' ? method.replace(/With.*|ForTypes/, '') : method };
  PARAMETERS[method].forEach((name, i) => (operation[name] = args[i]));
  return operation;
}

/**
 * The store `core` (a RunStoreCore) as the inspector reads one: each method returns a Promise,
 * `subscribe(filter, callback)` tells of the commits made through it or by a runstore/workflow
 * engine on `core`, and `changed(change?)` tells of a write made on `core` directly (by default
 * a change of every area).
 */
export function coreStore(core) {
  const changes = new Changes();
  const tell = (change) => changes.dispatch(change);
  noticesOf(core).listen(tell);
  const store = {
    get persistence() {
      return core.persistence;
    },
    subscribe: (filter, callback) => changes.subscribe(filter, callback),
    changed: (change) => tell({ requestId: null, areas: [...AREAS], workflowIds: [], heads: {}, revisions: [], ...change }),
  };
  for (const method of METHODS) {
    store[method] = async (...args) => {
      const result = core[method](...args);
      if (method === 'commit') {
        if (!result.replayed) tell(changeOf(args[0].operations, args[0].requestId ?? null));
      } else if (method === 'importDatabase') {
        store.changed();
      } else if (method in WRITE_RESULTS) {
        tell(changeOf([operationOf(method, args)]));
      }
      return result;
    };
  }
  return store;
}

/**
 * Serves `core` (a RunStoreCore, in a worker) to `connectCore` on the other end of `port` (a
 * MessagePort, or the worker's global scope): its calls, its change notices (as `coreStore`
 * hears them) and, with `engine`, `engine.signal`, `engine.cancel`, `engine.retry` and
 * `engine.describe`.
 * Returns the store `coreStore` made, whose `changed()` tells of the worker's own writes.
 */
export function exposeCore(core, port, { engine = null } = {}) {
  const store = coreStore(core);
  store.subscribe(null, (change) => port.postMessage({ runstoreInspector: 'change', change }));
  const engineMethods = new Set(['signal', 'cancel', 'retry', 'describe']);
  port.addEventListener('message', async ({ data }) => {
    if (data?.runstoreInspector !== 'call') return;
    const { id, target, method, args } = data;
    try {
      let result;
      if (target === 'engine') {
        if (!engine || !engineMethods.has(method)) throw new RunStoreError('INVALID_INPUT', `no engine method ${method} here`, { field: 'method' });
        result = await engine[method](...args);
      } else if (method === 'hello') {
        result = { persistence: core.persistence, engine: engine ? { device: engine.device } : null };
      } else {
        if (!METHODS.includes(method)) throw new RunStoreError('INVALID_INPUT', `no store method ${method}`, { field: 'method' });
        result = await store[method](...args);
      }
      port.postMessage({ runstoreInspector: 'answer', id, result });
    } catch (error) {
      port.postMessage({ runstoreInspector: 'answer', id, error: serializeError(error) });
    }
  });
  port.start?.();
  return store;
}

/**
 * The store (and engine, if the worker exposed one) that `exposeCore` serves at the other end
 * of `port`: `{ store, engine }`, for the inspector's `store` and `engine`.
 */
export async function connectCore(port) {
  const changes = new Changes();
  const waiting = new Map();
  let next = 0;
  port.addEventListener('message', ({ data }) => {
    if (data?.runstoreInspector === 'change') changes.dispatch(data.change);
    if (data?.runstoreInspector !== 'answer' || !waiting.has(data.id)) return;
    const { resolve, reject } = waiting.get(data.id);
    waiting.delete(data.id);
    if (data.error) reject(toRunStoreError(data.error));
    else resolve(data.result);
  });
  port.start?.();
  const call = (target, method, args) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, { resolve, reject });
      port.postMessage({ runstoreInspector: 'call', id, target, method, args });
    });
  const hello = await call('store', 'hello', []);
  const store = { persistence: hello.persistence, subscribe: (filter, callback) => changes.subscribe(filter, callback) };
  for (const method of METHODS) store[method] = (...args) => call('store', method, args);
  const engine = hello.engine && {
    device: hello.engine.device,
    signal: (...args) => call('engine', 'signal', args),
    cancel: (...args) => call('engine', 'cancel', args),
    retry: (...args) => call('engine', 'retry', args),
    describe: (...args) => call('engine', 'describe', args),
  };
  return { store, engine };
}
