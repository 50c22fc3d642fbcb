// Tabs sharing one store. Every tab queues for the Web Lock `runstore-leader:<name>` (queued,
// never `ifAvailable`); the holder, the leader, runs the database in its dedicated worker.
// Channels, all BroadcastChannels named `runstore:<name>:...`:
// - `control`: `who` (asked by a tab that joins), `leader` (a leader announces itself and where
//   its worker keeps the store, and answers `who`), `resign` (a leader steps down);
// - `requests`: a follower asks the leader's worker for a link of its own;
// - `link:<leaderId>:<clientId>`: a follower's calls and their answers. Only that follower and
//   the leader's worker hold it, so no other tab is woken by its traffic. The link is the
//   tab's: it holds the Web Lock `runstore-client:<clientId>` while it is open, and the
//   leader's worker drops the link only once that lock comes free (serve.js);
// - `changes`: the leader's worker announces each commit's changes to every tab.
// While a tab waits in the lock's queue it keeps a worker started, its wasm loaded, so that
// taking over starts at opening the files.
//
// A tab's time as leader is one Term: its worker, its lock's hold, its state (opening,
// leading, ending, ended) and its end, created when the lock is granted and ended as one
// thing (a term ended while it opens never announces itself). Every call is captured when it
// is made (wire.js) and kept until it settles: a call not answered when the leader changes is
// sent again, as captured, to the next leader under the same request id (every write carries
// one, so the store applies each at most once). Every call settles: at worst with UNAVAILABLE
// after the client's `requestTimeoutMs`, or when the tab closes.
import { RunStoreError, toRunStoreError } from './errors.js';
import { PROTOCOL, asValues } from './wire.js';
import { Batcher, isProgress, settleCall, unbatch } from './batch.js';

/** How long a leader that steps down waits for its worker to close the store. */
const CLOSE_LIMIT_MS = 3_000;
/** How long a closing tab waits for the answers to its calls before they settle as UNAVAILABLE. */
const SETTLE_LIMIT_MS = 3_000;
/** A call unanswered this long makes the tab ask again who leads, and for its link (a lost message, a stale leader). */
const ASK_AGAIN_MS = 1_000;
/** The pause before queueing again after this tab failed to open the store as leader. */
const RETRY_LEAD_MS = 1_000;
/** How long after a spare worker started it warms up (see #warmWhileWaiting). */
const WARM_AFTER_MS = 1_000;

/** The browser's APIs the tabs use; tests give others. */
function browserEnv() {
  return {
    locks: navigator.locks,
    BroadcastChannel,
    addEventListener: (type, listener) => addEventListener(type, listener),
    removeEventListener: (type, listener) => removeEventListener(type, listener),
    // Written out here, so that bundlers find the worker's file.
    startWorker: (name) => new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name }),
  };
}

/** What a leader may say its worker keeps the store in. */
const PERSISTENCES = new Set(['opfs', 'indexeddb', 'memory']);

const ENDED = new RunStoreError('BACKEND', 'the term ended before the store was open');

/**
 * One term of this tab as leader: from the lock's grant to the end of its worker. `open` runs
 * it up to serving, `serve` until it ends, `close` ends its worker. `end` may come at any
 * time: while opening, the worker is ended at once and `open` rejects; while leading, `serve`
 * returns.
 */
class Term {
  state = 'opening';
  #spare;
  #locks;
  #endRequested;
  #requestEnd;

  constructor(spare, leaderId, locks) {
    this.#spare = spare;
    this.worker = spare.worker;
    this.leaderId = leaderId;
    this.aliveLock = `runstore-alive:${leaderId}`;
    this.batcher = new Batcher((message) => this.worker.postMessage(message));
    this.#locks = locks;
    this.#endRequested = new Promise((resolve) => (this.#requestEnd = resolve));
  }

  /** Opens the store in the term's worker (`call` runs a lifecycle call); resolves to its phases. */
  async open(call, name, options, prefix) {
    const opened = call(this.worker, 'open', [name, options, { leaderId: this.leaderId, prefix, aliveLock: this.aliveLock }]);
    const phases = await Promise.race([
      opened,
      this.#spare.failed.then((error) => Promise.reject(error)),
      this.#endRequested.then(() => Promise.reject(ENDED)),
    ]);
    // Ended as the open finished: the worker is gone already.
    if (this.state !== 'opening') throw ENDED;
    this.state = 'leading';
    return phases;
  }

  /** Asks the term to end: at once while it opens, at `serve`'s return while it leads. */
  end() {
    if (this.state === 'opening') {
      this.state = 'ended';
      this.worker.terminate();
    } else if (this.state === 'leading') {
      this.state = 'ending';
    }
    this.#requestEnd();
  }

  /** Runs until the term is ended (`'stepped down'`) or its worker is gone (`'died'`). */
  serve() {
    return Promise.race([
      this.#endRequested.then(() => 'stepped down'),
      // Granted once the worker is gone: it held this lock from its start.
      this.#locks.request(this.aliveLock, () => 'died'),
      this.#spare.failed.then(() => 'died'),
    ]);
  }

  /** Sends a call to the term's worker: `alone` in a message of its own, else with its task's. */
  post(message, alone) {
    if (alone) this.worker.postMessage(message);
    else this.batcher.send(message);
  }

  /** Ends the worker: it closes the store first (within a limit) unless it `died`. */
  async close(call, how) {
    this.state = 'ended';
    if (how !== 'died') await Promise.race([call(this.worker, 'close', []).catch(() => {}), sleep(CLOSE_LIMIT_MS)]);
    this.worker.terminate();
  }
}

/** A follower's link to the worker of leader `leaderId`: usable once that worker said `linked`. */
class Link {
  ready = false;
  protocol = 0;

  constructor(channel, leaderId) {
    this.channel = channel;
    this.leaderId = leaderId;
    this.batcher = new Batcher((message) => channel.postMessage(message));
  }

  /** Sends a call, in the form this leader's worker reads. */
  post(message, alone) {
    const form = this.protocol >= PROTOCOL ? message : asValues(message);
    if (alone) this.channel.postMessage(form);
    else this.batcher.send(form);
  }

  close() {
    this.channel.close();
  }
}

export class Tabs {
  #name;
  #options;
  #timeoutMs;
  #onChange;
  /**
   * Called when this tab may have missed change notices: a new leader (with where the feed
   * stood as it began to lead), a page back from the cache.
   */
  #onMaybeMissed;
  /** Where the feed stood as this tab's current term began to lead (see serve.js `open`). */
  #feedAt = null;
  #env;
  #clientId = crypto.randomUUID?.() ?? String(Math.random()).slice(2);
  #prefix;
  #control;
  #requests;
  #changes;
  /** `joining`, `joined`, `leaving`, `left`. */
  #state = 'joining';
  /** This tab's term as leader, from the lock's grant until it resigned; or null. */
  #term = null;
  /** This tab's link to the leader's worker while it follows; or null. */
  #link = null;
  /** The worker started ahead of this tab's turn as leader, or null. */
  #spare = null;
  /** The leader's id as this tab last heard it (this tab's own while it leads), or null. */
  #leaderId = null;
  /** Where the leader's worker keeps the store ('opfs', 'indexeddb', 'memory'), as last heard. */
  #persistence = null;
  /** Settles once the lock callback of this tab's current turn returned. */
  #leading = Promise.resolve();
  /** Settles once the worker of this tab's last term is gone. */
  #closing = Promise.resolve();
  #leaving = null;
  #terms = 0;
  #queued = false;
  #abort = null;
  #hidden = false;
  #joined = null;
  #joinStarted = 0;
  #releaseClientLock = () => {};
  /** Calls not settled yet, by id: each with its captured message. */
  #pending = new Map();
  #nextId = 1;
  #sweep = null;
  #lifecycle = new Map();
  #leaderListeners = new Set();

  constructor(name, options, { timeoutMs, onChange, onMaybeMissed = () => {}, env = browserEnv() }) {
    this.#name = name;
    this.#options = options;
    this.#timeoutMs = timeoutMs;
    this.#onChange = onChange;
    this.#onMaybeMissed = onMaybeMissed;
    this.#env = env;
    this.#prefix = `runstore:${name}:`;
  }

  get persistence() {
    return this.#persistence;
  }

  get isLeader() {
    return this.#term?.state === 'leading' && this.#leaderId === this.#term.leaderId;
  }

  onLeaderChange(callback) {
    this.#leaderListeners.add(callback);
    return () => this.#leaderListeners.delete(callback);
  }

  /**
   * Joins the tabs of this store; resolves once a leader (maybe this tab) can answer and the
   * store's own checks passed this tab's name and options: this tab's own open as leader, or
   * the leader's worker, asked with this tab's first link (a follower opens nothing itself).
   */
  async join() {
    await this.#holdClientLock();
    const { BroadcastChannel } = this.#env;
    this.#control = new BroadcastChannel(`${this.#prefix}control`);
    this.#requests = new BroadcastChannel(`${this.#prefix}requests`);
    this.#changes = new BroadcastChannel(`${this.#prefix}changes`);
    this.#control.onmessage = (event) => this.#onControl(event.data ?? {});
    this.#changes.onmessage = (event) => {
      const changes = event.data?.changes;
      if (Array.isArray(changes)) for (const change of changes) this.#onChange(change);
    };
    this.#env.addEventListener('pagehide', this.#onPageHide);
    this.#env.addEventListener('pageshow', this.#onPageShow);
    const joined = new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new RunStoreError('UNAVAILABLE', `no tab opened store ${this.#name} within ${this.#timeoutMs} ms`, { requestId: null })),
        this.#timeoutMs,
      );
      const settle = (then) => {
        if (this.#joined.settled) return;
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
    this.#state = 'joined';
    this.#joinStarted = performance.now();
    this.#startSweep();
    this.#queue();
    this.#control.postMessage({ type: 'who' });
    await joined;
  }

  /**
   * What the leader's worker answered to this tab's name and options (`checked` in its link
   * answer). A leader running an older package does not check: this tab's spare worker does.
   */
  #onChecked(checked) {
    if (this.#joined.settled) return;
    if (checked === undefined) {
      const spare = this.#spare ?? (this.#spare = this.#startWorker());
      Promise.race([
        this.#lifecycleCall(spare.worker, 'check', [this.#name, this.#options]),
        spare.failed.then((error) => Promise.reject(error)),
      ]).then(this.#joined.resolve, this.#joined.reject);
    } else if (checked.ok) {
      this.#joined.resolve();
    } else {
      this.#joined.reject(toRunStoreError(checked.error));
    }
  }

  /**
   * Holds the lock `runstore-client:<clientId>` until the tab leaves: a leader's worker keeps
   * this tab's link for as long as it is held.
   */
  #holdClientLock() {
    return new Promise((granted, failed) => {
      this.#env.locks
        .request(`runstore-client:${this.#clientId}`, () => {
          granted();
          return new Promise((release) => (this.#releaseClientLock = release));
        })
        .catch(failed);
    });
  }

  /**
   * Leaves: this tab's term ends (the store goes to the next tab), it never leads again, and
   * its calls settle (answered, or UNAVAILABLE after a short wait); then the channels close.
   */
  leave() {
    if (this.#leaving) return this.#leaving;
    this.#state = 'leaving';
    this.#abort?.abort();
    this.#term?.end();
    this.#leaving = this.#leave();
    return this.#leaving;
  }

  async #leave() {
    await this.#leading;
    await this.#closing;
    await this.#settlePending();
    this.#state = 'left';
    this.#env.removeEventListener('pagehide', this.#onPageHide);
    this.#env.removeEventListener('pageshow', this.#onPageShow);
    clearInterval(this.#sweep);
    this.#sweep = null;
    this.#unlink();
    this.#spare?.worker.terminate();
    this.#spare = null;
    for (const channel of [this.#control, this.#requests, this.#changes]) channel?.close();
    this.#releaseClientLock();
  }

  /** Waits for the answers to this tab's calls, a while; what is still unanswered then is UNAVAILABLE. */
  async #settlePending() {
    const deadline = performance.now() + SETTLE_LIMIT_MS;
    while (this.#pending.size > 0 && performance.now() < deadline) await sleep(20);
    for (const entry of [...this.#pending.values()]) this.#expire(entry, `store ${this.#name} was closed first`);
  }

  /**
   * Sends a call (`message`, captured by wire.js) to the leader, again to each next leader until
   * one answers. `onProgress` hears the progress the leader reports while it runs (see `rekey`).
   */
  call(message, onProgress) {
    if (this.#state !== 'joined') return Promise.reject(new RunStoreError('BACKEND', 'the store is closed'));
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const entry = {
        message: { id, ...message },
        sentTo: null,
        started: performance.now(),
        resolve,
        reject,
        onProgress,
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
    const term = this.#term;
    let post;
    if (term?.leaderId === leaderId) {
      // A term that is ending takes no more calls: they go to the next leader.
      if (term.state !== 'leading') return;
      post = (entry) => term.post(entry.message, alone);
    } else if (this.#link?.leaderId === leaderId) {
      // Calls made while the link is asked for leave once it is ready (#resend).
      if (!this.#link.ready) return;
      const link = this.#link;
      post = (entry) => link.post(entry.message, alone);
    } else {
      this.#openLink(leaderId, entries);
      return;
    }
    for (const entry of entries) {
      try {
        post(entry);
        entry.sentTo = leaderId;
      } catch {
        // A channel or worker that closed meanwhile: the call goes to the next leader.
      }
    }
  }

  /**
   * Opens this follower's link to the worker of `leaderId` and asks that worker to listen on
   * it; the request carries `entries` (as values: the worker's package may be older), which
   * the worker runs and answers on the link.
   */
  #openLink(leaderId, entries) {
    this.#unlink();
    const channel = new this.#env.BroadcastChannel(`${this.#prefix}link:${leaderId}:${this.#clientId}`);
    const link = new Link(channel, leaderId);
    channel.onmessage = (event) => {
      if (!event.data?.linked) this.#settle(event.data);
      else if (!link.ready) {
        link.ready = true;
        // A leader running an older package says no protocol: calls go to it as values.
        link.protocol = typeof event.data.protocol === 'number' ? event.data.protocol : 0;
        this.#onChecked(event.data.checked);
        this.#resend();
      } else if (event.data.fresh) {
        // The worker had no link to this tab any more: what went over it went unheard.
        this.#send(this.#unanswered((entry) => entry.sentTo === leaderId), true);
      }
    };
    this.#link = link;
    // Until the store's checks passed this tab's name and options, the leader's worker runs them;
    // with a key, every leader does (it serves only tabs whose key it checked).
    const check = this.#checkToSend();
    this.#requests.postMessage({ link: this.#clientId, to: leaderId, check, calls: entries.map((entry) => asValues(entry.message)) });
    for (const entry of entries) entry.sentTo = leaderId;
  }

  /**
   * Asks the leader's worker for this tab's link again: a request or its answer may have been
   * lost. Until the link is ready, the request carries again the calls the first one carried
   * (and, while the tab joins, its name and options); a worker that had no link to this tab
   * any more answers `fresh`.
   */
  #askForLink() {
    const link = this.#link;
    if (!link) return;
    const carried = link.ready ? [] : this.#unanswered((entry) => entry.sentTo === link.leaderId);
    const check = this.#checkToSend();
    this.#requests.postMessage({ link: this.#clientId, to: link.leaderId, check, calls: carried.map((entry) => asValues(entry.message)) });
  }

  /** The name and options for the leader's worker to check, when it must: see `#send`. */
  #checkToSend() {
    return this.#joined.settled && this.#options?.key == null ? undefined : [this.#name, this.#options];
  }

  #unlink() {
    this.#link?.close();
    this.#link = null;
  }

  #unanswered(which) {
    return [...this.#pending.values()].filter(which);
  }

  /**
   * After the leader changed (or this follower's link became ready): every call not sent to
   * the current leader goes there, each in a message of its own.
   */
  #resend() {
    this.#send(this.#unanswered((entry) => entry.sentTo !== this.#leaderId), true);
  }

  #settle(data) {
    // The leader's own worker sends the changes this tab has not had with its answers, or in
    // a message of their own ahead of later answers: subscribers hear of them before the
    // calls' promises settle.
    if (Array.isArray(data?.changes)) for (const change of data.changes) this.#onChange(change);
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
    if (isProgress(message)) {
      // A call that reports progress is running: its time to an answer starts again.
      entry.started = performance.now();
      entry.onProgress?.(message.progress);
      return;
    }
    this.#pending.delete(message.id);
    // A step under this client's own request id that answers `replayed` was applied by this
    // call's own first sending, to a leader that ended before answering: it answers as then.
    if (entry.message.madeId && message.ok && message.value?.replayed) message.value.replayed = false;
    settleCall(entry, message);
  }

  #expire(entry, why) {
    const { id, method, requestId = null } = entry.message;
    this.#pending.delete(id);
    const ask = requestId ? `; requestOutcome(${JSON.stringify(requestId)}) tells whether it committed` : '';
    entry.reject(new RunStoreError('UNAVAILABLE', `${method} of store ${this.#name} was not answered: ${why}${ask}`, { requestId }));
  }

  #startSweep() {
    if (this.#sweep !== null) return;
    const every = Math.min(ASK_AGAIN_MS, Math.max(50, this.#timeoutMs / 4));
    this.#sweep = setInterval(() => this.#sweepPending(), every);
  }

  /** Expires calls past their time; asks again who leads, and for the link, for calls (or a join) waiting long. */
  #sweepPending() {
    const now = performance.now();
    let waiting = !this.#joined.settled && now - this.#joinStarted > ASK_AGAIN_MS;
    for (const entry of [...this.#pending.values()]) {
      if (now - entry.started >= this.#timeoutMs) this.#expire(entry, `no leader answered within ${this.#timeoutMs} ms`);
      else if (now - entry.started > ASK_AGAIN_MS) waiting = true;
    }
    if (waiting && !this.isLeader) {
      this.#control.postMessage({ type: 'who' });
      this.#askForLink();
    }
    if (this.#pending.size === 0 && this.#joined.settled) {
      clearInterval(this.#sweep);
      this.#sweep = null;
    }
  }

  #onControl(message) {
    if (message.type === 'who') {
      if (this.isLeader) {
        this.#control.postMessage({ type: 'leader', leaderId: this.#leaderId, persistence: this.#persistence, feedAt: this.#feedAt });
      }
    } else if (message.type === 'leader' && typeof message.leaderId === 'string') {
      if (message.leaderId === this.#leaderId) return;
      this.#leaderId = message.leaderId;
      // A leader running an older package does not say: its store is on OPFS.
      this.#persistence = PERSISTENCES.has(message.persistence) ? message.persistence : 'opfs';
      this.#resend();
      // The last leader may have ended between a commit and its notice.
      this.#onMaybeMissed(message.feedAt);
    } else if (message.type === 'resign' && message.leaderId === this.#leaderId) {
      this.#leaderId = null;
      this.#unlink();
    }
  }

  #onPageHide = () => {
    // The page may not come back: hand the store on now, while the page can still act.
    this.#hidden = true;
    this.#abort?.abort();
    this.#term?.end();
  };

  #onPageShow = (event) => {
    if (!event.persisted || this.#state !== 'joined') return;
    this.#hidden = false;
    this.#queue();
    this.#control.postMessage({ type: 'who' });
    // A page in the back-forward cache hears no notices.
    this.#onMaybeMissed();
  };

  #queue() {
    if (this.#queued || this.#state !== 'joined' || this.#hidden) return;
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
    this.#env.locks
      .request(this.#lockName, { signal: abort.signal }, () => (this.#leading = this.#lead()))
      .then(requeue, () => requeue(null));
  }

  /**
   * Has the spare `worker` warm up (see serve.js) a moment after it started, if another tab
   * leads then: this tab waits in the queue, likely long enough. A tab that is granted the
   * lock at once opens at once; the moment keeps the warm-up's CPU off a hand-off under way
   * (a tab that reloads starts while the next leader takes over).
   */
  #warmWhileWaiting(worker) {
    setTimeout(() => {
      this.#env.locks
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
    const worker = this.#env.startWorker(`runstore ${this.#name}`);
    let crashed;
    const failed = new Promise((resolve) => (crashed = resolve));
    worker.addEventListener('message', (event) => this.#settle(event.data));
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      crashed(new RunStoreError('BACKEND', `the store's worker failed: ${event.message ?? 'could not start'}`));
    });
    return { worker, failed };
  }

  /**
   * Runs this tab's turn as leader (the Web Lock is held until the returned promise settles):
   * a term opens the store, leads until it ends, and resigns; its worker closes after. Resolves
   * to the pause before queueing again, or null for none.
   */
  async #lead() {
    if (this.#state !== 'joined' || this.#hidden) return null;
    const lockGranted = Date.now();
    const term = new Term(this.#spare ?? this.#startWorker(), `${this.#clientId}/${++this.#terms}`, this.#env.locks);
    this.#spare = null;
    this.#term = term;
    let phases;
    try {
      phases = await term.open((...call) => this.#lifecycleCall(...call), this.#name, this.#options, this.#prefix);
    } catch (error) {
      this.#term = null;
      term.worker.terminate();
      if (error === ENDED) return null;
      if (!this.#joined.settled) {
        this.#joined.reject(error);
        return null;
      }
      return RETRY_LEAD_MS;
    }
    this.#leaderId = term.leaderId;
    this.#persistence = phases.persistence;
    this.#unlink();
    this.#feedAt = phases.feedAt;
    this.#onMaybeMissed(phases.feedAt);
    this.#control.postMessage({ type: 'leader', leaderId: term.leaderId, persistence: phases.persistence, feedAt: phases.feedAt });
    // When each phase of taking over ended (ms since the epoch), for profiling tools and benchmarks.
    globalThis.performance?.mark?.('runstore:lead', { detail: { ...phases, lockGranted, announced: Date.now() } });
    this.#joined.resolve();
    this.#notifyLeader(true);
    this.#resend();
    const how = await term.serve();
    term.state = 'ended';
    this.#term = null;
    if (this.#leaderId === term.leaderId) this.#leaderId = null;
    this.#control.postMessage({ type: 'resign', leaderId: term.leaderId });
    this.#notifyLeader(false);
    // The lock goes at once, while the worker closes the store: the next leader starts taking
    // over meanwhile, and its worker waits for the pool's own lock, which this worker holds
    // until the store is closed (or the worker is gone).
    this.#closing = term.close((...call) => this.#lifecycleCall(...call), how);
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
