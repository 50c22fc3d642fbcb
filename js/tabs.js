// Tabs sharing one store. Every tab queues for the Web Lock `runstore-leader:<name>` (queued,
// never `ifAvailable`); the holder, the leader, runs the database in its dedicated worker.
// Channels, all BroadcastChannels named `runstore:<name>:...`:
// - `control`: `who` (asked by a tab that joins), `leader` (a leader announces itself and where
//   its worker keeps the store, and answers `who`), `resign` (a leader steps down);
// - `requests`: a follower asks the leader's worker for a link of its own;
// - `link:<leaderId>:<clientId>`: a follower's calls and their answers. Only that follower and
//   the leader's worker hold it, so no other tab is woken by its traffic;
// - `changes`: the leader's worker announces each commit's changes to every tab.
// While a tab waits in the lock's queue it keeps a worker started, its wasm loaded, so that
// taking over starts at opening the files.
// A call not answered when the leader changes is sent again to the next leader under the same
// id (writes carry a request id, so the store applies each at most once). Every call settles:
// at worst with UNAVAILABLE after the client's `requestTimeoutMs`.
import { RunStoreError, toRunStoreError } from './errors.js';
import { unsendable } from './unsendable.js';
import { asArguments, callMessage } from './wire.js';
import { Batcher, settleCall, unbatch } from './batch.js';

/** How long a leader that steps down waits for its worker to close the store. */
const CLOSE_LIMIT_MS = 3_000;
/** A call unanswered this long makes the tab ask again who leads (a lost message, a stale leader). */
const ASK_AGAIN_MS = 1_000;
/** The pause before queueing again after this tab failed to open the store as leader. */
const RETRY_LEAD_MS = 1_000;
/** How long after a spare worker started it warms up (see #warmWhileWaiting). */
const WARM_AFTER_MS = 1_000;

export class Tabs {
  #name;
  #options;
  #timeoutMs;
  #onChange;
  #clientId = crypto.randomUUID?.() ?? String(Math.random()).slice(2);
  #prefix;
  #control;
  #requests;
  #changes;
  /** A follower's link to the leader's worker: { leaderId, channel, batcher, ready }, or null. */
  #link = null;
  /** The worker started ahead of this tab's turn as leader, or null. */
  #spare = null;
  /** The leader's id as this tab last heard it (this tab's own while it leads), or null. */
  #leaderId = null;
  /** Where the leader's worker keeps the store ('opfs', 'indexeddb', 'memory'), as last heard. */
  #persistence = null;
  /** While this tab leads: its worker, its leader id, and the function that ends its term. */
  #worker = null;
  #workerBatcher = null;
  #ownLeaderId = null;
  #stepDown = null;
  #leading = Promise.resolve();
  /** Settles once the worker of this tab's last term as leader has closed the store. */
  #closing = Promise.resolve();
  #term = 0;
  #queued = false;
  #abort = null;
  #hidden = false;
  #left = false;
  #joined = null;
  #pending = new Map();
  #nextId = 1;
  #sweep = null;
  #lifecycle = new Map();
  #leaderListeners = new Set();

  constructor(name, options, { timeoutMs, onChange }) {
    this.#name = name;
    this.#options = options;
    this.#timeoutMs = timeoutMs;
    this.#onChange = onChange;
    this.#prefix = `runstore:${name}:`;
  }

  get persistence() {
    return this.#persistence;
  }

  get isLeader() {
    return this.#worker !== null && this.#leaderId === this.#ownLeaderId;
  }

  onLeaderChange(callback) {
    this.#leaderListeners.add(callback);
    return () => this.#leaderListeners.delete(callback);
  }

  /** Joins the tabs of this store; resolves once a leader (maybe this tab) can answer. */
  join() {
    this.#control = new BroadcastChannel(`${this.#prefix}control`);
    this.#requests = new BroadcastChannel(`${this.#prefix}requests`);
    this.#changes = new BroadcastChannel(`${this.#prefix}changes`);
    this.#control.onmessage = (event) => this.#onControl(event.data ?? {});
    this.#changes.onmessage = (event) => this.#onChange(event.data);
    addEventListener('pagehide', this.#onPageHide);
    addEventListener('pageshow', this.#onPageShow);
    const joined = new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new RunStoreError('UNAVAILABLE', `no tab opened store ${this.#name} within ${this.#timeoutMs} ms`, { requestId: null })),
        this.#timeoutMs,
      );
      const settle = (then) => {
        this.#joined.settled = true;
        clearTimeout(timer);
        then();
      };
      this.#joined = {
        settled: false,
        resolve: () => settle(resolve),
        reject: (error) => settle(() => reject(error)),
      };
    });
    this.#queue();
    this.#control.postMessage({ type: 'who' });
    return joined;
  }

  /** Leaves: a leader hands the store on; pending calls fail; the channels close. */
  async leave() {
    this.#left = true;
    this.#abort?.abort();
    this.#stepDown?.();
    await this.#leading;
    await this.#closing;
    this.#failAll(new RunStoreError('BACKEND', 'the store is closed'));
    removeEventListener('pagehide', this.#onPageHide);
    removeEventListener('pageshow', this.#onPageShow);
    this.#unlink();
    this.#spare?.worker.terminate();
    this.#spare = null;
    for (const channel of [this.#control, this.#requests, this.#changes]) channel?.close();
  }

  /** Sends a call to the leader (again to each next leader until one answers). */
  call(method, args, requestId) {
    if (this.#left) return Promise.reject(new RunStoreError('BACKEND', 'the store is closed'));
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const entry = {
        message: callMessage(id, method, args, requestId),
        args,
        sentTo: null,
        deadline: performance.now() + this.#timeoutMs,
        resolve,
        reject,
      };
      this.#pending.set(id, entry);
      this.#send([entry], false);
      this.#startSweep();
    });
  }

  /**
   * Sends `entries` to the leader as this tab last heard it: to its own worker while it
   * leads, else over its link to the leader's worker. Without a link to that leader yet, the
   * request for one carries the calls, so that they need no round trip before they travel (a
   * follower asks for its link as soon as it hears of a new leader, calls or not).
   * `alone`: one message per call (calls sent again after a hand-off, each answered as soon as
   * it ran) rather than the task's calls in one message.
   */
  #send(entries, alone) {
    const leaderId = this.#leaderId;
    if (leaderId === null) return;
    if (leaderId === this.#ownLeaderId && this.#worker) {
      const worker = this.#worker;
      const batcher = this.#workerBatcher;
      for (const entry of entries) this.#post(entry, leaderId, (m) => (alone ? worker.postMessage(m) : batcher.send(m)));
    } else if (this.#link?.leaderId === leaderId) {
      // Calls made while the link is asked for leave once it is ready (#resend).
      if (!this.#link.ready) return;
      const { channel, batcher, text } = this.#link;
      for (const entry of entries) this.#post(entry, leaderId, (m) => (alone ? channel.postMessage(m) : batcher.send(m)), text);
    } else {
      this.#openLink(leaderId, entries);
    }
  }

  /**
   * Posts one call, as text where it has a text form and `text` (the worker takes it);
   * a call whose arguments cannot be cloned fails and never reaches the store.
   */
  #post(entry, leaderId, post, text = true) {
    try {
      post(text ? entry.message : asArguments(entry.message, entry.args));
      entry.sentTo = leaderId;
    } catch (error) {
      this.#pending.delete(entry.message.id);
      entry.reject(unsendable(entry.message.method, entry.args, error));
    }
  }

  /**
   * Opens this follower's link to the worker of `leaderId` and asks that worker to listen on
   * it; the request carries `entries`, which the worker runs and answers on the link.
   */
  #openLink(leaderId, entries) {
    this.#unlink();
    const channel = new BroadcastChannel(`${this.#prefix}link:${leaderId}:${this.#clientId}`);
    const link = { leaderId, channel, batcher: new Batcher((m) => channel.postMessage(m)), ready: false, text: false };
    channel.onmessage = (event) => {
      if (event.data?.linked) {
        if (link.ready) return;
        link.ready = true;
        // A leader running an older package answers without `text`: calls go to it as arguments.
        link.text = event.data.text === true;
        this.#resend();
      } else this.#settle(event.data);
    };
    this.#link = link;
    // The request goes before the worker said what it takes: its calls go as arguments.
    const sendable = entries.filter((entry) => {
      try {
        structuredClone(asArguments(entry.message, entry.args));
        return true;
      } catch (error) {
        this.#pending.delete(entry.message.id);
        entry.reject(unsendable(entry.message.method, entry.args, error));
        return false;
      }
    });
    this.#requests.postMessage({
      link: this.#clientId,
      to: leaderId,
      calls: sendable.map((entry) => asArguments(entry.message, entry.args)),
    });
    for (const entry of sendable) entry.sentTo = leaderId;
  }

  #askForLink() {
    if (this.#link && !this.#link.ready) this.#requests.postMessage({ link: this.#clientId, to: this.#link.leaderId, calls: [] });
  }

  #unlink() {
    this.#link?.channel.close();
    this.#link = null;
  }

  /**
   * After the leader changed (or this follower's link became ready): every call not sent to
   * the current leader goes there, each in a message of its own.
   */
  #resend() {
    this.#send([...this.#pending.values()].filter((entry) => entry.sentTo !== this.#leaderId), true);
  }

  #settle(data) {
    for (const message of unbatch(data)) this.#settleOne(message);
  }

  #settleOne(message) {
    if (typeof message?.id !== 'number') return;
    if (message.id < 0) {
      const waiter = this.#lifecycle.get(message.id);
      this.#lifecycle.delete(message.id);
      if (message.ok) waiter?.resolve(message.value);
      else waiter?.reject(toRunStoreError(message.error));
      return;
    }
    const entry = this.#pending.get(message.id);
    if (!entry) return;
    this.#pending.delete(message.id);
    settleCall(entry, message);
  }

  #expire(entry, why) {
    const { id, method, requestId } = entry.message;
    this.#pending.delete(id);
    const ask = requestId ? `; requestOutcome(${JSON.stringify(requestId)}) tells whether it committed` : '';
    entry.reject(new RunStoreError('UNAVAILABLE', `${method} of store ${this.#name} was not answered: ${why}${ask}`, { requestId: requestId ?? null }));
  }

  #startSweep() {
    if (this.#sweep !== null) return;
    const every = Math.min(ASK_AGAIN_MS, Math.max(50, this.#timeoutMs / 4));
    this.#sweep = setInterval(() => this.#sweepPending(), every);
  }

  #sweepPending() {
    const now = performance.now();
    let waiting = false;
    for (const entry of [...this.#pending.values()]) {
      if (now >= entry.deadline) this.#expire(entry, `no leader answered within ${this.#timeoutMs} ms`);
      else if (now - (entry.deadline - this.#timeoutMs) > ASK_AGAIN_MS) waiting = true;
    }
    if (waiting && !this.isLeader) {
      this.#control.postMessage({ type: 'who' });
      this.#askForLink();
    }
    if (this.#pending.size === 0) {
      clearInterval(this.#sweep);
      this.#sweep = null;
    }
  }

  #failAll(error) {
    for (const entry of this.#pending.values()) entry.reject(error);
    this.#pending.clear();
  }

  #onControl(message) {
    if (message.type === 'who') {
      if (this.isLeader) this.#control.postMessage({ type: 'leader', leaderId: this.#ownLeaderId, persistence: this.#persistence });
    } else if (message.type === 'leader' && typeof message.leaderId === 'string') {
      if (message.leaderId === this.#leaderId) return;
      this.#leaderId = message.leaderId;
      this.#persistence = message.persistence ?? null;
      this.#joined?.resolve();
      this.#resend();
    } else if (message.type === 'resign' && message.leaderId === this.#leaderId) {
      this.#leaderId = null;
    }
  }

  #onPageHide = () => {
    // The page may not come back: hand the store on now, while the page can still act.
    this.#hidden = true;
    this.#abort?.abort();
    this.#stepDown?.();
  };

  #onPageShow = (event) => {
    if (!event.persisted || this.#left) return;
    this.#hidden = false;
    this.#queue();
    this.#control.postMessage({ type: 'who' });
  };

  #queue() {
    if (this.#queued || this.#left || this.#hidden) return;
    this.#queued = true;
    if (!this.#spare) {
      this.#spare = this.#startWorker();
      this.#warmWhileWaiting(this.#spare.worker);
    }
    const abort = new AbortController();
    this.#abort = abort;
    const requeue = (pause) => {
      this.#queued = false;
      if (pause === null) return;
      setTimeout(() => this.#queue(), pause);
    };
    navigator.locks
      .request(this.#lockName, { signal: abort.signal }, () => (this.#leading = this.#lead()))
      .then(requeue, () => requeue(null));
  }

  /**
   * Has the spare `worker` warm up (see worker.js) a moment after it started, if another tab
   * leads then: this tab waits in the queue, likely long enough. A tab that is granted the
   * lock at once opens at once; the moment keeps the warm-up's CPU off a hand-off under way
   * (a tab that reloads starts while the next leader takes over).
   */
  #warmWhileWaiting(worker) {
    setTimeout(() => {
      navigator.locks
        .query()
        .then(({ held }) => {
          if (this.#spare?.worker !== worker || !held.some((lock) => lock.name === this.#lockName)) return;
          this.#lifecycleCall(worker, 'warm', [this.#name]).catch(() => {});
        })
        .catch(() => {});
    }, WARM_AFTER_MS);
  }

  get #lockName() {
    return `runstore-leader:${this.#name}`;
  }

  /** Starts a store worker (it loads the wasm at once); `failed` resolves to its error if it fails. */
  #startWorker() {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: `runstore ${this.#name}` });
    let crashed;
    const failed = new Promise((resolve) => (crashed = resolve));
    worker.addEventListener('message', (event) => this.#settle(event.data));
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      crashed(new RunStoreError('BACKEND', `the store's worker failed: ${event.message ?? 'could not start'}`));
    });
    return { worker, failed };
  }

  /** Runs this tab's term as leader; the Web Lock is held until the returned promise settles. Resolves to the pause before queueing again. */
  async #lead() {
    if (this.#left || this.#hidden) return null;
    const lockGranted = Date.now();
    const leaderId = `${this.#clientId}/${++this.#term}`;
    const aliveLock = `runstore-alive:${leaderId}`;
    const { worker, failed } = this.#spare ?? this.#startWorker();
    this.#spare = null;
    const lead = { leaderId, prefix: this.#prefix, aliveLock };
    let phases;
    try {
      phases = await Promise.race([
        this.#lifecycleCall(worker, 'open', [this.#name, this.#options, lead]),
        failed.then((error) => Promise.reject(error)),
      ]);
    } catch (error) {
      worker.terminate();
      if (!this.#joined.settled) {
        this.#joined.reject(error);
        return null;
      }
      return RETRY_LEAD_MS;
    }
    this.#worker = worker;
    this.#workerBatcher = new Batcher((m) => worker.postMessage(m));
    this.#ownLeaderId = leaderId;
    this.#leaderId = leaderId;
    this.#persistence = phases.persistence;
    this.#unlink();
    this.#control.postMessage({ type: 'leader', leaderId, persistence: phases.persistence });
    // When each phase of taking over ended (ms since the epoch), for profiling tools and benchmarks.
    performance.mark?.('runstore:lead', { detail: { ...phases, lockGranted, announced: Date.now() } });
    this.#joined.resolve();
    this.#notifyLeader(true);
    this.#resend();
    const ended = await Promise.race([
      new Promise((resolve) => (this.#stepDown = () => resolve('stepped down'))),
      // Granted once the worker is gone: it held this lock from its start.
      navigator.locks.request(aliveLock, () => 'died'),
      failed.then(() => 'died'),
    ]);
    this.#stepDown = null;
    this.#worker = null;
    this.#workerBatcher = null;
    this.#ownLeaderId = null;
    if (this.#leaderId === leaderId) this.#leaderId = null;
    this.#control.postMessage({ type: 'resign', leaderId });
    this.#notifyLeader(false);
    // The lock goes at once, while the worker closes the store: the next leader starts taking
    // over meanwhile, and its worker waits for the pool's own lock, which this worker holds
    // until the store is closed (or the worker is gone).
    const closed = ended === 'died' ? Promise.resolve() : Promise.race([this.#lifecycleCall(worker, 'close', []).catch(() => {}), sleep(CLOSE_LIMIT_MS)]);
    this.#closing = closed.then(() => worker.terminate());
    return 0;
  }

  #lifecycleCall(worker, method, args) {
    const id = -this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#lifecycle.set(id, { resolve, reject });
      worker.postMessage({ id, method, args });
    });
  }

  #notifyLeader(isLeader) {
    for (const callback of this.#leaderListeners) {
      try {
        callback(isLeader);
      } catch (error) {
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
