// The main-thread client: RunStore.open starts a dedicated worker that hosts the store (OPFS
// needs one) and every method returns a Promise settled by the worker's answer.
//
// A shared store (OPFS, not `exclusive`) is open in any number of tabs: the tab that holds the
// queued Web Lock `runstore-leader:<name>` runs the worker, the others send their requests to
// that worker over BroadcastChannels (see tabs.js). Writes travel under a request id, so a
// request re-sent to the next leader after a hand-off is applied at most once.
import { RunStoreError, toRunStoreError } from './errors.js';
import { METHODS, PARAMETERS, PLAIN_WRITES, WRITE_OPERATIONS } from './methods.js';
import { Changes } from './changes.js';
import { Tabs } from './tabs.js';
import { unsendable } from './unsendable.js';
import { callMessage } from './wire.js';
import { Batcher, settleCall, unbatch } from './batch.js';
import { syncStore } from './sync.js';

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
  #changes = new Changes();
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
    const { exclusive, requestTimeoutMs, core } = splitOptions(options);
    const store = new RunStore(token);
    if (exclusive || core?.persistence === 'memory') {
      await store.#openPrivate(name, core);
    } else {
      store.#tabs = new Tabs(String(name), core, {
        timeoutMs: requestTimeoutMs,
        onChange: (change) => store.#changes.dispatch(change),
      });
      try {
        await store.#tabs.join();
      } catch (error) {
        store.#closed = true;
        store.#tabs.leave();
        throw toRunStoreError(error);
      }
    }
    return store;
  }

  async #openPrivate(name, options) {
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      type: 'module',
      name: `runstore ${String(name)}`,
    });
    this.#worker = worker;
    this.#batcher = new Batcher((message) => worker.postMessage(message));
    worker.addEventListener('message', (event) => this.#settle(event.data));
    // A worker that cannot start (its script or the wasm failed to load) fails every call.
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      // The worker is gone: this call and every later one fail instead of waiting forever.
      this.#closed = true;
      this.#failAll(new RunStoreError('BACKEND', `the store's worker failed: ${event.message ?? 'could not start'}`));
    });
    worker.addEventListener('messageerror', () => {
      this.#failAll(new RunStoreError('SERIALIZATION', "a message from the store's worker could not be read"));
    });
    try {
      ({ persistence: this.#persistence } = await this.#post('open', [name, options]));
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
   * the server lacks, pulls the server's; resolves to a summary with any conflicts.
   * @param {import('./index').SyncOptions} options
   */
  sync(options) {
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
      await this.#post('close', []);
    } finally {
      this.#worker.terminate();
      this.#failAll(new RunStoreError('BACKEND', 'the store is closed'));
    }
  }

  [send](method, args) {
    if (this.#closed) return Promise.reject(new RunStoreError('BACKEND', 'the store is closed'));
    if (!this.#tabs) return this.#post(method, args, null);
    const requestId = requestIdOf(method, args);
    if (requestId && method === 'commit') args = [{ ...args[0], requestId }];
    if (requestId && method === 'importDatabase') args = [args[0], requestId];
    return this.#tabs.call(method, args, requestId);
  }

  #post(method, args, requestId) {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject });
      try {
        this.#batcher.send(callMessage(id, method, args, requestId));
      } catch (error) {
        // Functions, symbols, Proxies, throwing getters and other values that cannot be
        // cloned never reach the store (a write's text is read from a Proxy as the store's
        // own walk reads one, see wire.js).
        this.#pending.delete(id);
        reject(unsendable(method, args, error));
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
    this.#pending.delete(message.id);
    settleCall(entry, message);
  }

  #failAll(error) {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}

/**
 * A shared store's request id for a write (but a plain one, see PLAIN_WRITES), or for a step
 * or an import without one: a call sent again to the next leader after a hand-off is applied
 * at most once. A private store (memory, or `exclusive`) never sends a call again, so its
 * calls go as given, as on runstore/core, without a request-log row each.
 */
function requestIdOf(method, args) {
  if (method in WRITE_OPERATIONS) return PLAIN_WRITES.has(method) ? null : newRequestId();
  // An import replaces the whole store: sent again after a hand-off, it must not be applied twice.
  if (method === 'importDatabase') return args[1] ?? newRequestId();
  if (method !== 'commit') return null;
  const step = args[0];
  if (!step || typeof step !== 'object') return null;
  return step.requestId ?? newRequestId();
}

export function newRequestId() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Separates the client's own options from the ones the store's core reads. */
function splitOptions(options) {
  if (!options || typeof options !== 'object') return { exclusive: false, requestTimeoutMs: REQUEST_TIMEOUT_MS, core: options };
  const { exclusive = false, requestTimeoutMs = REQUEST_TIMEOUT_MS, ...core } = options;
  if (typeof exclusive !== 'boolean') {
    throw new RunStoreError('INVALID_INPUT', 'exclusive must be a boolean', { field: 'options.exclusive' });
  }
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs <= 0) {
    throw new RunStoreError('INVALID_INPUT', 'requestTimeoutMs must be a positive integer', { field: 'options.requestTimeoutMs' });
  }
  return { exclusive, requestTimeoutMs, core };
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
