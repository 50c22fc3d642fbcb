// The main-thread client: RunStore.open starts a dedicated worker that hosts the store (OPFS
// needs one) and every method returns a Promise settled by the worker's answer.
//
// A shared store (OPFS or IndexedDB, not `exclusive`) is open in any number of tabs: the tab
// that holds the queued Web Lock `runstore-leader:<name>` runs the worker, the others send their
// requests to that worker over BroadcastChannels (see tabs.js). Every call is captured when it is made
// (wire.js); every write of a shared store travels as one step under a request id the client
// makes, so a request sent again to the next leader after a hand-off is applied at most once,
// and answers what it answered the first time.
//
// Where there is no `Worker` (Node, a server rendering pages) the store runs in this thread
// instead (in-process.js: the worker's own code, loaded only there), private to its client.
import { ErrorCode, RunStoreError, toRunStoreError } from './errors.js';
import { METHODS, PARAMETERS } from './methods.js';
import { Changes } from './changes.js';
import { Tabs } from './tabs.js';
import { WRITES, capture, refuseLongArrays } from './wire.js';
import { unsendable } from './unsendable.js';
import { Batcher, isProgress, settleCall, unbatch } from './batch.js';

export { RunStoreError, ErrorCode } from './errors.js';
export { storageEstimate, requestPersistence } from './storage.js';

const send = Symbol('send');
const token = Symbol('RunStore.open');

/** How long a call of a shared store may wait for a leader's answer before UNAVAILABLE. */
export const REQUEST_TIMEOUT_MS = 30_000;

export class RunStore {
  /** The private worker (exclusive and memory stores), or null for a shared store. */
  #worker = null;
  #batcher = null;
  /** The shared store's tab coordination, or null. */
  #tabs = null;
  #pending = new Map();
  #nextId = 1;
  #closed = false;
  #changes = new Changes((after) => this.changesSince(after));
  /** Where a private store lives ('opfs', 'indexeddb' or 'memory'). */
  #persistence = null;

  /** Use `RunStore.open`. */
  constructor(key) {
    if (key !== token) throw new TypeError('use RunStore.open(name, options)');
  }

  /**
   * Opens the store `name`: a persistent store (OPFS, IndexedDB, or `auto`, the default) is
   * shared by every tab of the origin unless `options.exclusive`; a memory store is private to
   * this client.
   * @param {string} name
   * @param {import('./index').ClientOpenOptions} [options]
   */
  static async open(name, options) {
    const { shared, requestTimeoutMs, core } = readOptions(options);
    checkSendable(name, core);
    const store = new RunStore(token);
    // A name that is not a string goes to the store's own open, which refuses it.
    if (!shared || typeof name !== 'string' || !hasWorkers()) {
      await store.#openPrivate(name, core);
    } else {
      store.#tabs = new Tabs(name, core, {
        timeoutMs: requestTimeoutMs,
        onChange: (change) => store.#changes.dispatch(change),
        onMaybeMissed: (feedAt) => void store.#changes.catchUp(feedAt),
      });
      try {
        await store.#tabs.join();
      } catch (error) {
        store.#closed = true;
        // The tab never leads, and lets go of every lock, before the open rejects.
        await store.#tabs.leave();
        throw toRunStoreError(error);
      }
    }
    return store;
  }

  async #openPrivate(name, options) {
    const worker = hasWorkers()
      ? new Worker(new URL('./worker.js', import.meta.url), {
          type: 'module',
          name: `runstore ${typeof name === 'string' ? name : ''}`,
        })
      : await startInProcess();
    this.#worker = worker;
    // Nothing is sent twice here: a read goes as its arguments, copied by postMessage (or, if
    // it leaves with its task's other calls, when it is made).
    // structuredClone is called on its own: called as the Batcher's method, browsers throw
    // "Illegal invocation" (it must be called on the global), which failed every call of a
    // task but its first.
    this.#batcher = new Batcher((message) => worker.postMessage(message), (message) => structuredClone(message));
    worker.addEventListener('message', (event) => this.#settle(event.data));
    // A worker that cannot start (its script or the wasm failed to load) fails every call.
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      // The worker is gone, or in no state to serve (its store's wasm trapped in an async call):
      // this call and every later one fail instead of waiting forever, and ending the worker
      // lets go of the store's files.
      this.#closed = true;
      worker.terminate();
      this.#failAll(new RunStoreError('BACKEND', `the store's worker failed: ${event.message ?? 'could not start'}`));
    });
    worker.addEventListener('messageerror', () => {
      this.#failAll(new RunStoreError('SERIALIZATION', "a message from the store's worker could not be read"));
    });
    try {
      ({ persistence: this.#persistence } = await this.#post({ method: 'open', args: [name, options] }));
    } catch (error) {
      this.#closed = true;
      worker.terminate();
      throw error;
    }
  }

  /**
   * Where the store keeps its database: 'opfs', 'indexeddb' or 'memory' (what
   * `persistence: 'auto'` took; for a shared store, what its leader took).
   */
  get persistence() {
    return this.#tabs ? this.#tabs.persistence : this.#persistence;
  }

  /** Whether this tab runs the database now (always true for an exclusive or memory store). */
  get isLeader() {
    return this.#tabs ? this.#tabs.isLeader : !this.#closed;
  }

  /**
   * Calls `callback(isLeader)` whenever this tab becomes or stops being the leader of a shared
   * store. Returns the function that stops the calls.
   * @param {(isLeader: boolean) => void} callback
   */
  onLeaderChange(callback) {
    if (typeof callback !== 'function') {
      throw new RunStoreError('INVALID_INPUT', 'callback must be a function', { field: 'callback' });
    }
    return this.#tabs ? this.#tabs.onLeaderChange(callback) : () => {};
  }

  /**
   * Calls `callback(change)` after each commit, in any tab, that matches `filter`. Returns the
   * function that ends the subscription.
   * @param {import('./index').ChangeFilter | null | undefined} filter
   * @param {(change: import('./index').Change) => void} callback
   */
  subscribe(filter, callback) {
    return this.#changes.subscribe(filter, callback);
  }

  /**
   * Syncs the store's journal with a runstore sync server (js/sync.js): pushes local appends
   * the server lacks, pulls the server's; resolves to a summary with any conflicts. The sync
   * code is loaded on the first call: an app that never syncs does not download it. A page
   * that cannot load it (offline before its first sync) gets UNAVAILABLE, as for a server it
   * cannot reach: nothing was synced, and a later call tries again.
   * @param {import('./index').SyncOptions} options
   */
  async sync(options) {
    let syncStore;
    try {
      ({ syncStore } = await import('./sync.js'));
    } catch (error) {
      throw new RunStoreError(ErrorCode.UNAVAILABLE, `the sync code did not load (${error?.message ?? error}): nothing was synced`);
    }
    return syncStore(this, options);
  }

  /** Closes this client. The leader of a shared store hands the database to the next tab. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#tabs) {
      await this.#tabs.leave();
      return;
    }
    try {
      await this.#post({ method: 'close', args: [] });
    } finally {
      this.#worker.terminate();
      this.#failAll(new RunStoreError('BACKEND', 'the store is closed'));
    }
  }

  [send](method, given) {
    if (this.#closed) return Promise.reject(new RunStoreError('BACKEND', 'the store is closed'));
    let message;
    let onProgress;
    try {
      let args = given;
      if (method === 'rekey') ({ args, onProgress } = takeProgress(given));
      // A shared store keeps every call as it was made, to send it again after a hand-off; a
      // private store's reads and imports are copied as they are posted.
      refuseLongArrays(method, args);
      const captured = this.#tabs || WRITES.has(method);
      message = captured ? capture(method, args, this.#requestIdOf(method, args)) : { method, args };
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#tabs ? this.#tabs.call(message, onProgress) : this.#post(message, onProgress);
  }

  /**
   * The request id a write travels under. A shared store's writes each get one (a `commit`
   * keeps its step's own, an import its own): a call sent again to the next leader after a
   * hand-off is applied at most once. A private store (memory, or `exclusive`) never sends a
   * call again, so its calls go as given, as on runstore/core, without a request-log row each.
   */
  #requestIdOf(method, args) {
    if (method === 'importDatabase') return args[1] ?? (this.#tabs ? newRequestId() : null);
    return this.#tabs && WRITES.has(method) ? newRequestId() : null;
  }

  #post(message, onProgress) {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject, onProgress });
      try {
        this.#batcher.send({ id, ...message });
      } catch (error) {
        // A read holding a function, a symbol, a Proxy or getter that throws never reaches the store.
        this.#pending.delete(id);
        reject(unsendable(message.method, message.args ?? [], error));
      }
    });
  }

  #settle(data) {
    for (const message of unbatch(data)) this.#settleOne(message);
  }

  #settleOne(message) {
    // A write's answer carries the change it committed: subscribers hear of it before the
    // caller's promise settles.
    if (message?.change) this.#changes.dispatch(message.change);
    const entry = this.#pending.get(message?.id);
    if (!entry) return;
    if (isProgress(message)) {
      entry.onProgress?.(message.progress);
      return;
    }
    this.#pending.delete(message.id);
    settleCall(entry, message);
  }

  #failAll(error) {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}

/** Whether this context can start dedicated workers (a page can; Node cannot). */
function hasWorkers() {
  return typeof Worker === 'function';
}

/** The store's host in this thread, loaded only where there are no workers. */
async function startInProcess() {
  let module;
  try {
    module = await import('./in-process.js');
  } catch (error) {
    throw new RunStoreError('BACKEND', `the store could not be loaded: ${error?.message ?? error}`);
  }
  return module.startInProcess();
}

/**
 * A new request id: a version 7 UUID (RFC 9562), the milliseconds since the epoch in its first
 * 48 bits, 74 random bits after them. The store's request log is keyed by id (schema_6.sql):
 * ids that grow with time go to the end of its b-tree, one page written per call, where
 * random ones land on any page and split pages all over it.
 */
export function newRequestId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let time = Date.now();
  for (let i = 5; i >= 0; i--) {
    bytes[i] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  let hex = '';
  for (const byte of bytes) hex += HEX[byte];
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * Reads the options once (a getter or Proxy that throws is INVALID_INPUT naming `options`, as
 * the store names an argument it cannot read) and separates the client's own, which it
 * checks, from the ones the store reads, which the store checks: a plain object is copied,
 * anything else goes to the store as it is.
 */
function readOptions(options) {
  // No options: persistence 'auto', a persistent store, shared.
  const defaults = { shared: options === undefined, requestTimeoutMs: REQUEST_TIMEOUT_MS, core: options };
  let own;
  try {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) return defaults;
    const prototype = Object.getPrototypeOf(options);
    if (prototype !== null && prototype !== Object.prototype) return defaults;
    own = {};
    for (const key of Object.keys(options)) own[key] = options[key];
  } catch {
    throw new RunStoreError('INVALID_INPUT', 'options could not be read (a getter or Proxy trap threw)', { field: 'options' });
  }
  const { exclusive = false, requestTimeoutMs = REQUEST_TIMEOUT_MS, ...core } = own;
  if (typeof exclusive !== 'boolean') {
    throw new RunStoreError('INVALID_INPUT', 'exclusive must be a boolean', { field: 'options.exclusive' });
  }
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs <= 0) {
    throw new RunStoreError('INVALID_INPUT', 'requestTimeoutMs must be a positive integer', { field: 'options.requestTimeoutMs' });
  }
  return { shared: !exclusive && SHARED_MEDIA.has(core.persistence), requestTimeoutMs, core };
}

/**
 * The persistence options whose store the origin's tabs share: every persistent one ('auto',
 * the default, included). A memory store is private; an unknown one goes to the store's own
 * open, which refuses it.
 */
const SHARED_MEDIA = new Set([undefined, 'auto', 'opfs', 'indexeddb']);

/**
 * `rekey`'s arguments as they travel: a function cannot reach the worker, so
 * `options.onProgress` stays here and the worker is asked to report progress (which it sends
 * with the call's id). Anything else goes as given, for the store to check.
 */
function takeProgress(args) {
  const options = args[1];
  let onProgress;
  try {
    onProgress = options !== null && typeof options === 'object' ? options.onProgress : undefined;
  } catch {
    throw new RunStoreError('INVALID_INPUT', 'options.onProgress could not be read (a getter or Proxy trap threw)', { field: 'options.onProgress' });
  }
  if (typeof onProgress !== 'function') return { args };
  return { args: [args[0], { progress: true }, ...args.slice(2)], onProgress };
}

/** Refuses a name or options that cannot reach the store's worker (a function, a symbol). */
function checkSendable(name, options) {
  for (const [field, value] of [['name', name], ['options', options]]) {
    try {
      structuredClone(value);
    } catch {
      throw new RunStoreError('INVALID_INPUT', `${field} cannot be sent to the store`, { field });
    }
  }
}

for (const method of METHODS) {
  const arity = PARAMETERS[method].length;
  Object.defineProperty(RunStore.prototype, method, {
    value(...args) {
      // Arguments past the method's own are ignored, as the wasm class ignores them.
      return this[send](method, args.length > arity ? args.slice(0, arity) : args);
    },
    writable: true,
    configurable: true,
  });
}
