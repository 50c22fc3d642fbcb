// The main-thread client: RunStore.open starts a dedicated worker that hosts the store (OPFS
// needs one) and every method returns a Promise settled by the worker's answer.
import { RunStoreError, toRunStoreError } from './errors.js';
import { METHODS, PARAMETERS } from './methods.js';

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
        // Functions, symbols, Proxies, throwing getters and other values that cannot be
        // cloned never reach the store.
        this.#pending.delete(id);
        const field = unsendablePath(method, args);
        reject(new RunStoreError('INVALID_INPUT', `${field} cannot be sent to the store: ${describe(error)}`, { field }));
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

/** Nesting and breadth beyond which the search for an unsendable value stops. */
const SEARCH_DEPTH = 64;
const SEARCH_ENTRIES = 10_000;

/**
 * The path of the first value in `args` that postMessage cannot send, from the method's
 * parameter names: `events[0].data`. Runs only after a send failed.
 */
function unsendablePath(method, args) {
  const names = PARAMETERS[method] ?? [];
  for (let i = 0; i < args.length; i++) {
    const path = firstUnsendable(args[i], names[i] ?? `arguments[${i}]`, 0);
    if (path) return path;
  }
  return names[0] ?? method;
}

function firstUnsendable(value, path, depth) {
  try {
    structuredClone(value);
    return null;
  } catch {
    // Look inside for the value that failed.
  }
  if (depth >= SEARCH_DEPTH || value === null || typeof value !== 'object') return path;
  try {
    const isArray = Array.isArray(value);
    // Own entries only: a sparse array of length 2 ** 32 - 1 has few.
    const entries = Object.entries(value).slice(0, SEARCH_ENTRIES);
    for (const [key, item] of entries) {
      const step = isArray ? `[${key}]` : `.${clip(key)}`;
      const inner = firstUnsendable(item, path + step, depth + 1);
      if (inner) return inner;
    }
  } catch {
    // A Proxy or getter that throws: this value is the one.
  }
  return path;
}

/** A caller's text cut to a length a message can quote. */
function clip(text, chars = 64) {
  return text.length <= chars ? text : `${text.slice(0, chars)}… (${text.length} characters)`;
}

/** The message of a thrown value, which may itself be hostile. */
function describe(error) {
  try {
    return clip(String(error?.message ?? error), 200);
  } catch {
    return 'it cannot be cloned';
  }
}

for (const method of METHODS) {
  Object.defineProperty(RunStore.prototype, method, {
    value(...args) {
      // Arguments past the method's own are ignored, as the wasm class ignores them.
      return this[send](method, args.slice(0, PARAMETERS[method].length));
    },
    writable: true,
    configurable: true,
  });
}
