// A browser faked in Node for the tab protocol's unit tests (tabs-protocol.test.mjs): one
// origin's Web Locks, BroadcastChannels and dedicated workers, with pages and workers that can
// be ended at any moment (what they post after that goes nowhere; what they posted before
// still arrives), and messages delivered after random short delays (in order between one
// sender and one receiver, as browsers deliver them). What runs on it is the package's own
// code: js/tabs.js in each page, js/serve.js in each worker, on the real store (the wasm,
// in memory: a store's "files" are one in-memory store per name that outlives the workers,
// held by whichever worker holds the pool's lock, as OPFS files are).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { init, RunStoreCore } from '../../js/core.js';
import { serve } from '../../js/serve.js';
import { Tabs } from '../../js/tabs.js';
import { Changes } from '../../js/changes.js';
import { capture } from '../../js/wire.js';
import { random } from '../app/src/hostile.js';

export { random };

const wasm = readFileSync(fileURLToPath(new URL('../../pkg/runstore_bg.wasm', import.meta.url)));
const loaded = init({ module_or_path: wasm });

const abortError = () => Object.assign(new Error('aborted'), { name: 'AbortError' });

/** Exclusive Web Locks of one origin, each request and hold belonging to a context. */
class Locks {
  #queues = new Map();

  request(context, name, options, callback) {
    if (typeof options === 'function') [options, callback] = [{}, options];
    return new Promise((resolve, reject) => {
      if (!context.alive) return;
      const queue = this.#queues.get(name) ?? [];
      this.#queues.set(name, queue);
      if (options.ifAvailable && queue.length > 0) {
        Promise.resolve(callback(null)).then(resolve, reject);
        return;
      }
      const request = { context, callback, resolve, reject, held: false };
      if (options.signal) {
        if (options.signal.aborted) return reject(abortError());
        options.signal.addEventListener('abort', () => {
          if (request.held || !queue.includes(request)) return;
          queue.splice(queue.indexOf(request), 1);
          reject(abortError());
        });
      }
      queue.push(request);
      this.#grant(name);
    });
  }

  #grant(name) {
    const queue = this.#queues.get(name);
    const first = queue?.[0];
    if (!first || first.held) return;
    first.held = true;
    const release = () => {
      const at = queue.indexOf(first);
      if (at < 0) return;
      queue.splice(at, 1);
      setTimeout(() => this.#grant(name));
    };
    first.release = release;
    setTimeout(() => {
      if (!first.context.alive) return release();
      Promise.resolve()
        .then(() => first.callback({ name }))
        .then(
          (value) => {
            release();
            first.resolve(value);
          },
          (error) => {
            release();
            first.reject(error);
          },
        );
    });
  }

  /** Lets go of everything `context` holds or waits for: it is gone. */
  drop(context) {
    for (const [name, queue] of this.#queues) {
      for (const request of [...queue]) {
        if (request.context !== context) continue;
        if (request.held) request.release();
        else queue.splice(queue.indexOf(request), 1);
      }
      this.#grant(name);
    }
  }

  query() {
    const held = [];
    const pending = [];
    for (const [name, queue] of this.#queues) {
      for (const request of queue) (request.held ? held : pending).push({ name });
    }
    return Promise.resolve({ held, pending });
  }
}

/** A page or a worker: what it sends and receives stops when it ends. */
class Context {
  alive = true;
  children = new Set();
  onEnd = [];

  constructor(origin, kind) {
    this.origin = origin;
    this.kind = kind;
    const context = this;
    this.locks = {
      request: (name, options, callback) => origin.locks.request(context, name, options, callback),
      query: () => origin.locks.query(),
    };
    this.BroadcastChannel = class extends FakeChannel {
      constructor(name) {
        super(origin, context, name);
      }
    };
  }

  /** Ends this context (a tab closed or crashed, a worker terminated), and its workers with it. */
  end() {
    if (!this.alive) return;
    this.alive = false;
    for (const child of this.children) child.end();
    for (const then of this.onEnd) then();
    this.origin.locks.drop(this);
  }
}

/**
 * Delivers `deliver` after a random short delay, in order after what `route` delivered before.
 * One timer at a time per route: two timers whose delays differ by less than a millisecond may
 * fire in either order.
 */
function schedule(origin, route, deliver) {
  const at = Math.max(route.last ?? 0, performance.now() + origin.rng.next() * origin.maxDelayMs);
  route.last = at;
  route.queue ??= [];
  route.queue.push({ at, deliver });
  if (route.queue.length === 1) deliverNext(route);
}

function deliverNext(route) {
  const [next] = route.queue;
  setTimeout(() => {
    route.queue.shift();
    try {
      next.deliver();
    } finally {
      if (route.queue.length > 0) deliverNext(route);
    }
  }, Math.max(0, next.at - performance.now()));
}

class FakeChannel {
  onmessage = null;
  #origin;
  #context;
  #routes = new Map();

  constructor(origin, context, name) {
    this.#origin = origin;
    this.#context = context;
    this.name = name;
    this.closed = false;
    const members = origin.channels.get(name) ?? new Set();
    origin.channels.set(name, members);
    members.add(this);
  }

  postMessage(data) {
    if (this.closed) throw Object.assign(new Error('channel is closed'), { name: 'InvalidStateError' });
    if (!this.#context.alive || this.#origin.lose?.(this.name, data)) return;
    const copy = structuredClone(data);
    for (const member of this.#origin.channels.get(this.name)) {
      if (member === this) continue;
      const route = this.#routes.get(member) ?? {};
      this.#routes.set(member, route);
      schedule(this.#origin, route, () => member.#receive(copy));
    }
  }

  /** A message posted is delivered even if its sender ended since, as browsers queue it at once. */
  #receive(data) {
    if (this.closed || !this.#context.alive) return;
    this.onmessage?.({ data });
  }

  close() {
    this.closed = true;
    this.#origin.channels.get(this.name)?.delete(this);
  }
}

/** A dedicated worker as its page sees it: js/serve.js runs inside, on the fake origin. */
class FakeWorker {
  #listeners = { message: new Set(), error: new Set() };
  #scopeListeners = new Set();
  #toWorker = {};
  #toPage = {};

  constructor(origin, page) {
    this.origin = origin;
    this.page = page;
    this.context = new Context(origin, 'worker');
    page.children.add(this.context);
    const scope = {
      postMessage: (data) => this.#deliver(this.#toPage, data, this.context, page, this.#listeners.message),
      addEventListener: (type, listener) => type === 'message' && this.#scopeListeners.add(listener),
      // A worker's `self.close()`: it ends at once, as `terminate()` ends it from the page.
      close: () => this.context.end(),
    };
    serve(scope, {
      init: () => loaded,
      RunStoreCore: origin.storeClass(this.context),
      locks: this.context.locks,
      BroadcastChannel: this.context.BroadcastChannel,
      storage: undefined,
    });
  }

  #deliver(route, data, from, to, listeners) {
    if (!from.alive) return;
    const copy = structuredClone(data);
    schedule(this.origin, route, () => {
      if (!to.alive) return;
      for (const listener of listeners) listener({ data: copy });
    });
  }

  postMessage(data) {
    this.#deliver(this.#toWorker, data, this.page, this.context, this.#scopeListeners);
  }

  addEventListener(type, listener) {
    this.#listeners[type]?.add(listener);
  }

  terminate() {
    this.context.end();
  }
}

/**
 * Makes the store's real wasm trap, through runstore/core as a store's call would: a method
 * called on a store whose pointer lies past the end of wasm memory reads out of bounds (the
 * read traps before anything is written). Throws what runstore/core throws for a trap.
 */
export function trap() {
  const outOfBounds = Object.create(RunStoreCore.prototype);
  outOfBounds.__wbg_ptr = 0xffff_fff0;
  outOfBounds.head('trap');
}

/**
 * A private store's worker (js/serve.js on the real store, as a page's exclusive or memory
 * store runs): `call(method, args)` resolves to its answer. `trapNext` set makes the store's
 * next call trap.
 */
export function privateWorker() {
  let receive;
  let next = 0;
  const waiting = new Map();
  const scope = {
    postMessage: (answer) => waiting.get(answer.id)?.(answer),
    addEventListener: (type, listener) => (receive = listener),
  };
  const worker = { trapNext: false };
  const trapping = (store) =>
    new Proxy(store, {
      get(target, key) {
        const value = target[key];
        if (typeof value !== 'function') return value;
        return (...args) => {
          if (worker.trapNext) trap();
          return value.apply(target, args);
        };
      },
    });
  serve(scope, {
    init: () => loaded,
    RunStoreCore: { open: async (...args) => trapping(await RunStoreCore.open(...args)) },
    locks: undefined,
    BroadcastChannel: undefined,
    storage: undefined,
  });
  worker.call = (method, args) =>
    new Promise((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      receive({ data: { id, method, args } });
    });
  return worker;
}

/** One origin: its locks, channels, workers and stores. */
export class Origin {
  locks = new Locks();
  channels = new Map();
  /** Each store's content, by name: one in-memory store that outlives the workers. */
  disks = new Map();
  pages = [];

  /** Called with the worker's context after each write the store applied or replayed, before its answer leaves. */
  afterWrite = null;
  /** Called with each write's method and request id before the store runs it: true makes the store's wasm trap instead. */
  trapBefore = null;
  /** Called with each message posted on a channel (its name, the message): true loses it. */
  lose = null;
  /** How long each open of an OPFS store takes, and whether it fails. */
  openDelayMs = 0;
  failOpen = false;

  constructor({ seed = 1, maxDelayMs = 2 } = {}) {
    this.rng = random(seed);
    this.maxDelayMs = maxDelayMs;
  }

  /** The store class a worker in `context` sees: OPFS opens the named store's one content, under its pool's lock. */
  storeClass(context) {
    const origin = this;
    return class {
      static __checkOpen(name, options) {
        return RunStoreCore.__checkOpen(name, options);
      }

      static async open(name, options) {
        if (options?.persistence !== 'opfs') return RunStoreCore.open(name, options);
        RunStoreCore.__checkOpen(name, options);
        let granted;
        let release;
        const held = new Promise((resolve) => (granted = resolve));
        context.locks.request(`runstore-pool:${name}`, { ifAvailable: true }, (lock) => {
          granted(lock !== null);
          return lock && new Promise((resolve) => (release = resolve));
        });
        if (!(await held)) throw Object.assign(new Error(`the pool ${name} is held elsewhere`), { code: 'BUSY' });
        await sleep(origin.openDelayMs);
        if (origin.failOpen) {
          release();
          throw Object.assign(new Error('the files could not be opened'), { code: 'BACKEND' });
        }
        const store = await origin.disk(name);
        return new Proxy(store, {
          get(target, key) {
            if (key === 'close') return async () => release();
            if (key === 'free') return () => {};
            const value = target[key];
            if (typeof value !== 'function') return value;
            return (...args) => {
              if (!context.alive) throw new Error('the worker is gone');
              if (String(key).startsWith('__write') && origin.trapBefore?.(args[0], args[1])) trap();
              const result = value.apply(target, args);
              if (String(key).startsWith('__write')) origin.afterWrite?.(context, args[0], args[1]);
              return result;
            };
          },
        });
      }
    };
  }

  async disk(name) {
    if (!this.disks.has(name)) this.disks.set(name, RunStoreCore.open(name, { persistence: 'memory' }));
    return this.disks.get(name);
  }

  /** A new page of the origin. */
  page() {
    const context = new Context(this, 'page');
    const listeners = { pagehide: new Set(), pageshow: new Set() };
    const page = {
      context,
      env: {
        locks: context.locks,
        BroadcastChannel: context.BroadcastChannel,
        addEventListener: (type, listener) => listeners[type]?.add(listener),
        removeEventListener: (type, listener) => listeners[type]?.delete(listener),
        startWorker: () => new FakeWorker(this, context),
      },
      hide: () => listeners.pagehide.forEach((listener) => listener({ persisted: false })),
      close: () => context.end(),
    };
    this.pages.push(page);
    return page;
  }

  /** Ends every page (and so every worker). */
  end() {
    for (const page of this.pages) page.close();
  }
}

/**
 * A client of store `name` in `page`, as RunStore drives the protocol: each call captured
 * when it is made under a request id this test chooses, change notices to `changes`.
 */
export async function openClient(page, name, { timeoutMs = 3_000 } = {}) {
  // As RunStore does: a gap in the notices is filled from the store's feed, through the tabs.
  const changes = new Changes((after) => tabs.call(capture('changesSince', [after], null)));
  const tabs = new Tabs(name, { persistence: 'opfs' }, {
    timeoutMs,
    onChange: (change) => changes.dispatch(change),
    onMaybeMissed: (feedAt) => void changes.catchUp(feedAt),
    env: page.env,
  });
  const heard = [];
  changes.subscribe(null, (change) => heard.push(change));
  try {
    await tabs.join();
  } catch (error) {
    // As RunStore.open: the tab leaves (and lets go of its locks) before the open rejects.
    await tabs.leave();
    throw error;
  }
  return {
    tabs,
    heard,
    call: (method, args, requestId = null) => tabs.call(capture(method, args, requestId)),
    close: () => tabs.leave(),
  };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition()` holds (polling), or throws after `ms`. */
export async function until(condition, ms = 5_000, what = 'the condition') {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms`);
    await sleep(5);
  }
}
