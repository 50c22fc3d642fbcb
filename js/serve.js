// The dedicated worker that hosts one store for the main-thread RunStore client (worker.js
// starts it with the browser's globals). Requests are answered strictly in order: each
// message runs to completion (its commit included) before the next starts, so a write is
// acknowledged only once it is durable. A message may carry several calls (`{ batch }`, see
// batch.js): they run in order and are answered in one message. Each call runs through
// host.js, which makes its answer and its change notice.
//
// In a shared store this worker belongs to the leader tab: it also answers the other tabs'
// requests, each tab over a BroadcastChannel of its own that only this worker and that tab
// hold (`<prefix>link:<leaderId>:<clientId>`, opened when the tab asks on `<prefix>requests`),
// and announces every commit's changes to all tabs (gathered for a moment, see `noteShared`;
// its own page has them with its next answer). A link lasts as long as its tab: each
// tab holds the Web Lock `runstore-client:<clientId>` while it is open, and the worker drops
// the link once that lock comes free (the tab closed, or is gone). Otherwise changes go to
// its own page, with the answers.
//
// The worker starts loading the wasm as soon as it starts: a tab waiting in the leader lock's
// queue keeps one ready, so that taking over does not wait for a worker and the wasm, and has
// it warm up (`warm`) all that does not need the store's files.
import { RunStoreError, isTrap, serializeError, trapError } from './errors.js';
import { unbatch } from './batch.js';
import { JsonText, runCall } from './host.js';
import { PROTOCOL } from './wire.js';
import { MAX_UNANNOUNCED, PAST_EVERY_CHANGE } from './changes.js';

/** How long a leader keeps retrying while the previous leader's worker still holds the files. */
const TAKEOVER_LIMIT_MS = 15_000;

/** How long a leader's worker gathers changes before it announces them to every tab. */
const ANNOUNCE_AFTER_MS = 10;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * Serves the store's calls that arrive at `scope` (the worker's global: `postMessage`,
 * `addEventListener('message')`), with `env`: `init` and `RunStoreCore` (runstore/core),
 * `locks` (a Web Locks LockManager), `BroadcastChannel`, and `storage` (navigator.storage,
 * for the warm-up).
 */
export function serve(scope, env) {
  const { init, RunStoreCore, locks, BroadcastChannel, storage } = env;
  let store = null;
  /** The key the store was opened with (checked against a joining tab's). */
  let openedKey;
  /** The tabs whose key passed that check, in this worker's time as leader. */
  const admitted = new Set();
  /** Whether an open has begun: a warm-up (see `warm`) then stops. */
  let openBegun = false;
  /** Set while this worker leads a shared store: { leaderId, prefix, requests, changes, links }. */
  let shared = null;
  /** Whether this worker opens or leads a shared store: its tabs take over when it ends. */
  let leads = false;
  const started = Date.now();
  const ready = init().then(() => Date.now());
  // An init failure is reported to the open that awaits it.
  ready.catch(() => {});

  /**
   * Waits until no other worker holds the store's pool (the Web Lock the pool is installed
   * under, see src/wasm/mod.rs): the previous leader's worker holds it until it has closed the
   * store or is gone, so this wakes the moment the files come free instead of polling.
   */
  function poolFree(name) {
    return locks
      .request(`runstore-pool:${name}`, { signal: AbortSignal.timeout(TAKEOVER_LIMIT_MS) }, () => {})
      .catch(() => {});
  }

  /**
   * Opens the store. A leader first waits for the pool to come free, then retries BUSY with
   * short pauses: the previous leader's worker can keep its OPFS handles for a moment after its
   * lock went (up to about 3 s for a worker that was busy), and that is a hand-off, not a
   * conflict. Resolves to the times of the phases (ms since the epoch) and the attempts.
   */
  async function openStore(name, options, lead) {
    const phases = { workerStarted: started, wasmReady: await ready };
    if (lead) {
      await poolFree(name);
      phases.poolFree = Date.now();
    }
    const begun = Date.now();
    for (let attempt = 1, pause = 10; ; attempt++, pause = Math.min(pause * 2, 50)) {
      try {
        store = await RunStoreCore.open(name, options);
        return { ...phases, opened: Date.now(), attempts: attempt };
      } catch (error) {
        if (!lead || error.code !== 'BUSY' || Date.now() - begun > TAKEOVER_LIMIT_MS) throw error;
        await sleep(pause);
      }
    }
  }

  /**
   * Readies a spare worker while its tab waits in the leader lock's queue, with nothing that
   * needs the store's files: opens this worker's way to the origin's OPFS up to the store's
   * directory, and runs the store's common calls once on a throwaway in-memory store (the
   * browser compiles wasm functions on their first call: a first open and write in a fresh
   * worker take several times as long as later ones). It runs beside the message queue, one
   * call per task, and stops as soon as an open has begun, which it thus delays by at most one
   * call. Best effort: a failure here leaves the open only as slow as it was.
   */
  async function warm(name) {
    const event = (n) => ({ type: 'custom', name: n, recordedAt: 0, data: { n } });
    const calls = [
      { method: 'head', args: ['w'] },
      { method: 'append', requestId: 'warm-a', text: JSON.stringify(['w', [event('a')], 0]) },
      {
        method: 'commit',
        requestId: 'warm-b',
        text: JSON.stringify([
          {
            operations: [
              { op: 'append', workflowId: 'w', events: [event('b')], expectedSeq: 1, outbox: [{ dispatchKey: 'k', workflowId: 'w', ordinal: 2, activityType: 'a', input: null, visibleAfter: 0 }] },
              { op: 'scheduleTimer', workflowId: 'w', timerId: 't', fireAt: 1 },
            ],
          },
        ]),
        holes: [0],
        bytes: [new Uint8Array([1])],
      },
      { method: 'readHistory', args: ['w', { limit: 10 }] },
      { method: 'requestOutcome', args: ['warm-b'] },
      { method: 'compareAndSwapCheckpoint', text: JSON.stringify([{ checkpointId: 'c', revision: 0, state: {}, updatedAt: 0 }]) },
      { method: 'loadCheckpoint', args: ['c'] },
    ];
    let scratch = null;
    try {
      // Where OPFS is missing (WebKit, private windows) the warm-up goes on without it.
      const root = await storage?.getDirectory().catch(() => null);
      await root?.getDirectoryHandle(String(name)).catch(() => {});
      await ready;
      if (openBegun) return;
      scratch = await RunStoreCore.open('warm-up', { persistence: 'memory' });
      for (const call of calls) {
        await nextTask();
        if (openBegun) return;
        runCall(scratch, call);
      }
    } catch {
      // The warm-up is not the store: whatever it met, the store's own calls report.
    } finally {
      scratch?.close().then(
        () => scratch.free(),
        () => {},
      );
    }
  }

  /** Takes a lock held for as long as this worker lives: its page learns of its end by waiting for it. */
  function holdAliveLock(name) {
    return new Promise((granted) => {
      locks.request(name, () => {
        granted();
        return new Promise(() => {});
      });
    });
  }

  async function open(name, options, lead) {
    openBegun = true;
    if (store) throw new RunStoreError('INVALID_INPUT', 'this worker has a store open already');
    leads = Boolean(lead);
    if (lead) await holdAliveLock(lead.aliveLock);
    const phases = await openStore(name, options, lead);
    openedKey = options?.key;
    if (!lead) return { persistence: store.persistence };
    startServing(lead);
    // Where the store lives: what `persistence: 'auto'` took, for the page's `store.persistence`.
    // `feedAt`: the feed's newest number as this worker began to lead, for the tabs (changes.js).
    const feedAt = store.changesSince(PAST_EVERY_CHANGE, 1).newest;
    return { ...phases, feedAt, persistence: store.persistence };
  }

  /** Checks a store's name and options as opening it would, without opening it. */
  async function check(name, options) {
    await ready;
    RunStoreCore.__checkOpen(name, options);
  }

  function startServing({ leaderId, prefix }) {
    const requests = new BroadcastChannel(`${prefix}requests`);
    shared = { leaderId, prefix, requests, changes: new BroadcastChannel(`${prefix}changes`), links: new Map() };
    requests.onmessage = (event) => {
      const { link, to, calls, check } = event.data ?? {};
      if (to !== leaderId || typeof link !== 'string') return;
      const result = Array.isArray(check) ? checked(check) : undefined;
      if (result?.ok) admitted.add(link);
      const channel = openLink(link, result);
      // The calls the tab sent with its request, each answered on the link as soon as it ran.
      if (Array.isArray(calls)) for (const call of calls) receiveFrom(link, call, (answer) => channel.postMessage(answer));
    };
  }

  /**
   * The store's checks of a joining tab's name and options, as `open` runs them; and its key
   * against the one this worker opened the store with (or last rekeyed it to): a tab that
   * could not open the store itself is not served by the leader. A guard against a tab given
   * the wrong key, not a wall against script of the same origin, which the key crosses.
   */
  function checked([name, options]) {
    try {
      RunStoreCore.__checkOpen(name, options);
      if (!sameKey(openedKey, options?.key)) {
        throw new RunStoreError('WRONG_KEY', 'wrong key: the key does not open this store (the leader tab opened it with another)');
      }
      return { ok: true };
    } catch (error) {
      return { ok: false, error: serializeError(error) };
    }
  }

  /**
   * Opens (or finds) the channel to the tab `clientId`, tells the tab that this worker listens
   * there (`fresh`: the channel is new, so whatever the tab sent on it before went unheard;
   * `checked`: what the store's checks said of the tab's name and options, when it asked),
   * and returns the channel. The link goes when the tab's own lock comes free.
   */
  function openLink(clientId, check) {
    const { links, prefix, leaderId } = shared;
    let link = links.get(clientId);
    const fresh = link === undefined;
    if (fresh) {
      const channel = new BroadcastChannel(`${prefix}link:${leaderId}:${clientId}`);
      channel.onmessage = (event) => receiveFrom(clientId, event.data, (answer) => channel.postMessage(answer));
      link = { channel, gone: new AbortController() };
      links.set(clientId, link);
      const drop = () => {
        if (links.get(clientId) !== link) return;
        links.delete(clientId);
        channel.close();
      };
      locks.request(`runstore-client:${clientId}`, { signal: link.gone.signal }, drop).catch(() => {});
    }
    // `protocol`: this worker takes writes as captured text (wire.js); a tab running an older
    // package reads only `linked`, and a tab that sees no `protocol` sends values.
    link.channel.postMessage({ linked: true, protocol: PROTOCOL, fresh, checked: check });
    return link.channel;
  }

  async function close() {
    if (shared) {
      // Calls answered in the batch this close came in announce their changes first.
      broadcastChanges();
      shared.requests.close();
      shared.changes.close();
      for (const { channel, gone } of shared.links.values()) {
        gone.abort();
        channel.close();
      }
      shared = null;
    }
    const closing = store;
    store = null;
    // A store whose wasm trapped is left as it is: ending the worker lets go of its files.
    if (closing && !trapped) {
      await closing.close();
      closing.free();
    }
  }

  /** The change of the call running now, announced with its answer (see `answerTo`). */
  let announced = null;
  /** A shared store's changes whose calls were answered, not yet announced to every tab. */
  let unsent = [];
  /** Of those, the ones this worker's own page has not had with an answer. */
  let unsentToPage = [];
  /** The timer that announces `unsent`, or null. */
  let announcing = null;

  /**
   * Notes a shared store's change for every tab. The changes of the calls answered within
   * ANNOUNCE_AFTER_MS, up to MAX_UNANNOUNCED of them, leave in one message: a message on a
   * BroadcastChannel costs the worker 75 to 150 µs, as much as a small commit. A tab delivers
   * changes in the feed's order whichever channel brought them, and what a leader that ended
   * had not announced yet it reads from the feed (changes.js). This worker's own page, where
   * the workflow engine runs, has them at once with its next answer (`forPage`).
   */
  function noteShared(change) {
    unsent.push(change);
    unsentToPage.push(change);
    if (unsent.length >= MAX_UNANNOUNCED) broadcastChanges();
    else announcing ??= setTimeout(broadcastChanges, ANNOUNCE_AFTER_MS);
  }

  /** Announces the changes not announced yet to every tab, in one message. */
  function broadcastChanges() {
    clearTimeout(announcing);
    announcing = null;
    // The page has them on the same way as its answers, so in order with them: a call's
    // answer never comes before a change committed ahead of it (the copies it hears on the
    // channel it drops, changes.js).
    if (unsentToPage.length > 0) {
      scope.postMessage({ changes: unsentToPage });
      unsentToPage = [];
    }
    if (unsent.length === 0) return;
    const changes = unsent;
    unsent = [];
    shared?.changes.postMessage({ changes });
  }

  /** An answer for this worker's own page, with the changes it has not had yet. */
  function forPage(answer) {
    if (unsentToPage.length === 0) return answer;
    const changes = unsentToPage;
    unsentToPage = [];
    return { ...answer, changes };
  }

  /** Why every call fails once the store's wasm trapped (see `noteTrap`), else null. */
  let trapped = null;
  /** What `run` throws once the store's wasm trapped. */
  const TRAPPED = new Error('the store trapped');

  /**
   * Notes a trap in the store's WebAssembly (an out-of-bounds access, a Rust panic): its memory
   * is in no state to trust, so this worker runs none of it again. A shared store's leader ends
   * its worker once this task's answers have left: the next leader opens the store from what
   * was stored, and the calls this worker did not answer go to it again. A private store's page
   * closes it and opens it again (`env.afterTrap` says what to do where that is not enough).
   */
  function noteTrap(error) {
    if (trapped) return;
    const then = leads ? 'the next leader serves the store' : (env.afterTrap ?? 'close the store and open it again');
    trapped = `${trapError(error).message}; whether that call was applied is unknown; ${then}`;
    // What this leader held it announces now (plain objects, none of the wasm's memory).
    if (leads) {
      broadcastChanges();
      setTimeout(() => scope.close?.(), 0);
    }
  }

  /** The error to answer a call with for `error`; a trap's carries the call's `requestId`. */
  function answerError(error, requestId = null) {
    if (error !== TRAPPED && !isTrap(error)) return error;
    noteTrap(error);
    return new RunStoreError('BACKEND', trapped, { requestId, trapped: true });
  }

  // A trap in one of the store's async calls (open, close, an IndexedDB flush) escapes them:
  // their promises never settle.
  scope.addEventListener('error', (event) => isTrap(event.error) && noteTrap(event.error));
  scope.addEventListener('unhandledrejection', (event) => isTrap(event.reason) && noteTrap(event.reason));

  /** Runs one call on the open store and notes what it changed. */
  function run(message) {
    if (trapped) throw TRAPPED;
    if (!store) throw new RunStoreError('BACKEND', 'the store is closed');
    // What a read of the feed answers was announced before it: a tab that starts from its
    // answer (a subscriber's first read) hears of every change after it or in it.
    if (message.method === 'changesSince') broadcastChanges();
    const { value, change } = runCall(store, withProgress(message));
    announced = change;
    if (message.method === 'rekey') {
      // Tabs that joined with the old key are served no more: they open again with the new one.
      openedKey = message.args?.[0];
      admitted.clear();
    }
    return value;
  }

  /** A `rekey` with `reply`: what sends its progress reports at once (see `withProgress`). */
  const withReply = (message, send) => (message.method === 'rekey' ? { ...message, reply: send } : message);

  /**
   * A `rekey` whose client asked for progress (`{ progress: true }`, its `onProgress` stayed in
   * the page) with a callback that sends each report to that client with the call's id, ahead
   * of the answer.
   */
  function withProgress(message) {
    const { id, method, args, reply } = message;
    if (method !== 'rekey' || args?.[1]?.progress !== true || !reply) return message;
    return { ...message, args: [args[0], { onProgress: (progress) => reply({ id, progress }) }] };
  }

  /**
   * The answer to a call with `id` that returned `value`. The change it made goes with it to a
   * private store's page (one message per call, not two; the page's subscribers hear of it
   * before the call's promise settles); a shared store's goes to every tab after it.
   */
  function answerTo(id, value) {
    const answer = value instanceof JsonText ? { id, ok: true, json: value.text } : { id, ok: true, value };
    if (announced && shared) noteShared(announced);
    else if (announced) answer.change = announced;
    announced = null;
    return answer;
  }

  const failed = (id, error) => ({ id, ok: false, error: serializeError(error) });

  /**
   * Runs a call of the store's methods at once and returns its answer, or a promise of it when
   * the call left a write that is not stored yet (IndexedDB): a write is answered once stored.
   */
  function answerNow(message) {
    const { id } = message;
    announced = null;
    try {
      const value = run(message);
      if (store.__unflushed()) {
        const change = announced;
        announced = null;
        return answerFlushed(message, value, change);
      }
      return answerTo(id, value);
    } catch (error) {
      announced = null;
      return failed(id, answerError(error, message.requestId));
    }
  }

  /**
   * The answer to a call once its write is stored. A failed flush undid the write (the store
   * holds what IndexedDB holds): the call fails with the flush's error and announces nothing.
   */
  async function answerFlushed({ id, requestId }, value, change) {
    try {
      await store.flush();
    } catch (error) {
      return failed(id, answerError(error, requestId));
    }
    announced = change;
    return answerTo(id, value);
  }

  /**
   * Answers `message` now, or once its write is stored: then resolves when it was answered. A
   * leader whose wasm trapped answers nothing more, whether the call came after the trap or
   * waited for it: it is ending, and its tabs send the call to the next leader.
   */
  function respond(message, answer) {
    if (trapped && leads) return null;
    const result = answerNow(message);
    if (result instanceof Promise) return result.then(answer);
    answer(result);
    return null;
  }

  /** Opens, checks or closes: the calls that need to wait for a promise. */
  function answerLater({ id, method, args }) {
    if (trapped && method !== 'close') return Promise.resolve(failed(id, answerError(TRAPPED)));
    const list = Array.isArray(args) ? args : [];
    const done = method === 'open' ? open(...list) : method === 'check' ? check(...list) : close();
    return done.then(
      (value) => answerTo(id, value),
      (error) => failed(id, answerError(error)),
    );
  }

  /**
   * Open and close while they run, and a write being stored in IndexedDB (with the calls that
   * came meanwhile, which wait for them), or null: a call that finds it null runs and is
   * answered in the task its message arrived in.
   */
  let waiting = null;

  /** Runs `next` once what is waiting has run. */
  function afterWaiting(next) {
    const current = (waiting ?? Promise.resolve()).then(next);
    waiting = current;
    const settled = () => {
      if (waiting === current) waiting = null;
    };
    current.then(settled, settled);
  }

  const LATER = new Set(['open', 'close', 'check']);

  function enqueue(message, answer) {
    if (message.method === 'warm') {
      if (!openBegun) warm(...(Array.isArray(message.args) ? message.args : []));
      answer({ id: message.id, ok: true, value: undefined });
      return;
    }
    if (LATER.has(message.method)) afterWaiting(async () => answer(await answerLater(message)));
    else if (waiting) afterWaiting(() => respond(message, answer));
    else {
      // A write that is being stored holds back the calls after it.
      const storing = respond(message, answer);
      if (storing) afterWaiting(() => storing);
    }
  }

  /** Runs the calls of one message in order; a batch is answered in one message once all ran. */
  function receive(data, send) {
    if (!Array.isArray(data?.batch)) {
      enqueue(withReply(data ?? {}, send), send);
      return;
    }
    const answers = [];
    for (const message of unbatch(data)) enqueue(withReply(message ?? {}, send), (answer) => answers.push(answer));
    if (waiting) afterWaiting(() => send({ batch: answers }));
    else send({ batch: answers });
  }

  /**
   * As `receive`, for the calls of the tab `clientId` over its link: on a store opened with a
   * key, only a tab whose key passed the check (`admitted`) is served; the others' calls are
   * answered WRONG_KEY.
   */
  function receiveFrom(clientId, data, send) {
    if (openedKey == null || admitted.has(clientId)) {
      receive(data, send);
      return;
    }
    const refusal = (message) =>
      failed(message?.id, new RunStoreError('WRONG_KEY', 'wrong key: this tab has not shown the key that opens the store'));
    send(Array.isArray(data?.batch) ? { batch: unbatch(data).map(refusal) } : refusal(data));
  }

  scope.addEventListener('message', (event) => receive(event.data, (answer) => scope.postMessage(forPage(answer))));
}

/** Whether two keys of `open`'s options are the same: both absent, equal strings or equal bytes. */
function sameKey(a, b) {
  if (a == null || b == null) return a == null && b == null;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  return x.every((byte, index) => byte === y[index]);
}
