// The main-thread client: RunStore.open starts a dedicated worker that hosts the store (OPFS
// needs one) and every method returns a Promise settled by the worker's answer.
import { RunStoreError, toRunStoreError } from './errors.js';
import { METHODS } from './methods.js';

export { RunStoreError, ErrorCode } from './errors.js';
export { storageEstimate, requestPersistence } from './storage.js';

const send = Symbol('send');
const token = Symbol('RunStore.open');

export class RunStore {
  #worker;
  #pending = new Map();
  #nextId = 1;
  #closed = false;

  /** Use `RunStore.open`. */
  constructor(worker, key) {
    if (key !== token) throw new TypeError('use RunStore.open(name, options)');
    this.#worker = worker;
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
  }

  /**
   * Opens the store `name` in a new dedicated worker.
   * @param {string} name
   * @param {import('./types').OpenOptions} options
   */
  static async open(name, options) {
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      type: 'module',
      name: `runstore ${String(name)}`,
    });
    const store = new RunStore(worker, token);
    try {
      await store[send]('open', [name, options]);
    } catch (error) {
      store.#closed = true;
      worker.terminate();
      throw error;
    }
    return store;
  }

  /** Closes the database, releases its files and lock, and ends the worker. */
  async close() {
    if (this.#closed) return;
    try {
      await this[send]('close', []);
    } finally {
      this.#closed = true;
      this.#worker.terminate();
      this.#failAll(new RunStoreError('BACKEND', 'the store is closed'));
    }
  }

  [send](method, args) {
    if (this.#closed) return Promise.reject(new RunStoreError('BACKEND', 'the store is closed'));
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ id, method, args });
      } catch (error) {
        // Functions, symbols and other values that cannot be cloned never reach the store.
        this.#pending.delete(id);
        reject(new RunStoreError('INVALID_INPUT', `arguments of ${method} cannot be sent to the store: ${error.message}`, { field: method }));
      }
    });
  }

  #settle(message) {
    const entry = this.#pending.get(message?.id);
    if (!entry) return;
    this.#pending.delete(message.id);
    if (message.ok) entry.resolve(message.value);
    else entry.reject(toRunStoreError(message.error));
  }

  #failAll(error) {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}

for (const method of METHODS) {
  Object.defineProperty(RunStore.prototype, method, {
    value(...args) {
      return this[send](method, args);
    },
    writable: true,
    configurable: true,
  });
}
