// The dedicated worker that hosts one store for the main-thread RunStore client. Requests are
// answered strictly in order: each message runs to completion (its commit included) before the
// next starts, so a write is acknowledged only once it is durable. A message may carry several
// calls (`{ batch }`, see batch.js): they run in order and are answered in one message.
//
// In a shared store this worker belongs to the leader tab: it also answers the other tabs'
// requests, each tab over a BroadcastChannel of its own that only this worker and that tab
// hold (`<prefix>link:<leaderId>:<clientId>`, opened when the tab asks on `<prefix>requests`),
// and announces every commit's changes to all tabs. Otherwise changes go to its own page.
//
// The worker starts loading the wasm as soon as it starts: a tab waiting in the leader lock's
// queue keeps one ready, so that taking over does not wait for a worker and the wasm, and has
// it warm up (`warm`) all that does not need the store's files.
import { init, RunStoreCore } from './core.js';
import { RunStoreError, serializeError, toRunStoreError } from './errors.js';
import { METHODS, PARAMETERS, PLAIN_WRITES, WRITE_OPERATIONS, importChange, plainChange, stepChange } from './methods.js';
import { TEXT_WRITES } from './wire.js';
import { unbatch } from './batch.js';

const allowed = new Set(METHODS);
let store = null;
/** Whether an open has begun: a warm-up (see `warm`) then stops. */
let openBegun = false;
/** Set while this worker leads a shared store: { leaderId, prefix, requests, changes, links }. */
let shared = null;
const started = Date.now();
const ready = init().then(() => Date.now());
// An init failure is reported to the open that awaits it.
ready.catch(() => {});

/** How long a leader keeps retrying while the previous leader's worker still holds the files. */
const TAKEOVER_LIMIT_MS = 15_000;
/** Tab links kept open at once (one per tab that asked lately). */
const MAX_LINKS = 256;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until no other worker holds the store's pool (the Web Lock the pool is installed
 * under, see src/wasm/mod.rs): the previous leader's worker holds it until it has closed the
 * store or is gone, so this wakes the moment the files come free instead of polling.
 */
function poolFree(name) {
  return navigator.locks
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
    await poolFree(String(name));
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
  const row = { dispatchKey: 'k', workflowId: 'w', ordinal: 2, activityType: 'a', input: new Uint8Array([1]), visibleAfter: 0 };
  const steps = [
    (s) => s.head('w'),
    (s) => s.append('w', [event('a')], 0),
    (s) =>
      s.commit({
        requestId: 'warm-up',
        operations: [
          { op: 'append', workflowId: 'w', events: [event('b')], expectedSeq: 1, outbox: [row] },
          { op: 'scheduleTimer', workflowId: 'w', timerId: 't', fireAt: 1 },
        ],
      }),
    (s) => s.__commitText('{"requestId":null,"operations":[{"op":"scheduleTimer","workflowId":"w","timerId":"u","fireAt":1}]}'),
    (s) => s.readHistory('w', { limit: 10 }),
    (s) => s.requestOutcome('warm-up'),
    (s) => s.compareAndSwapCheckpoint({ checkpointId: 'c', revision: 0, state: {}, updatedAt: 0 }, null),
    (s) => s.loadCheckpoint('c'),
  ];
  let scratch = null;
  try {
    // Where OPFS is missing (WebKit, private windows) the warm-up goes on without it.
    const root = await navigator.storage?.getDirectory().catch(() => null);
    await root?.getDirectoryHandle(String(name)).catch(() => {});
    await ready;
    if (openBegun) return;
    scratch = await RunStoreCore.open('warm-up', { persistence: 'memory' });
    for (const step of steps) {
      await nextTask();
      if (openBegun) return;
      step(scratch);
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

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Takes a lock held for as long as this worker lives: its page learns of its end by waiting for it. */
function holdAliveLock(name) {
  return new Promise((granted) => {
    navigator.locks.request(name, () => {
      granted();
      return new Promise(() => {});
    });
  });
}

async function open(name, options, lead) {
  openBegun = true;
  if (store) throw new RunStoreError('INVALID_INPUT', 'this worker has a store open already');
  if (lead) await holdAliveLock(lead.aliveLock);
  const phases = await openStore(name, options, lead);
  if (lead) startServing(lead);
  // Where the store lives: what `persistence: 'auto'` took, for the page's `store.persistence`.
  return { ...(lead ? phases : {}), persistence: store.persistence };
}

function startServing({ leaderId, prefix }) {
  const requests = new BroadcastChannel(`${prefix}requests`);
  shared = { leaderId, prefix, requests, changes: new BroadcastChannel(`${prefix}changes`), links: new Map() };
  requests.onmessage = (event) => {
    const { link, to, calls } = event.data ?? {};
    if (to !== leaderId || typeof link !== 'string') return;
    const channel = openLink(link);
    // The calls the tab sent with its request, each answered on the link as soon as it ran.
    if (Array.isArray(calls)) for (const call of calls) receive(call, (answer) => channel.postMessage(answer));
  };
}

/**
 * Opens (or finds) the channel to the tab `clientId`, tells the tab that this worker listens
 * there, and returns the channel.
 */
function openLink(clientId) {
  const { links, prefix, leaderId } = shared;
  let channel = links.get(clientId);
  if (!channel) {
    if (links.size >= MAX_LINKS) {
      const [oldest, stale] = links.entries().next().value;
      stale.close();
      links.delete(oldest);
    }
    channel = new BroadcastChannel(`${prefix}link:${leaderId}:${clientId}`);
    channel.onmessage = (event) => receive(event.data, (answer) => channel.postMessage(answer));
    links.set(clientId, channel);
  }
  // `text`: this worker takes writes as their step's JSON text (wire.js); a tab running an
  // older package reads only `linked`, and a tab that sees no `text` sends arguments.
  channel.postMessage({ linked: true, text: true });
  return channel;
}

async function close() {
  if (shared) {
    // Calls answered in the batch this close came in announce their changes first.
    broadcastChanges();
    shared.requests.close();
    shared.changes.close();
    for (const channel of shared.links.values()) channel.close();
    shared = null;
  }
  const closing = store;
  store = null;
  if (closing) {
    await closing.close();
    closing.free();
  }
}

/** The change of the call running now, announced with its answer (see `answerTo`). */
let announced = null;
/** A shared store's changes whose calls were answered, for every tab once the answer left. */
let unsent = [];

/** Notes a commit's change for `answerTo` to announce. */
function publish(change) {
  if (change) announced = change;
}

/**
 * Announces what a shared store's calls changed to every tab, once their answers left: the
 * caller's answer does not wait for the channel (no tab's order of changes and answers is
 * promised across two channels).
 */
function broadcastChanges() {
  if (unsent.length === 0) return;
  const changes = unsent;
  unsent = [];
  for (const change of changes) shared?.changes.postMessage(change);
}

/**
 * A write with an operation, as a one-operation step: under the client's request id in a
 * shared store, without one in a private store (nothing there is ever sent twice).
 */
function writeAsStep(method, args, requestId) {
  const { operation, result } = WRITE_OPERATIONS[method];
  const step = { requestId, operations: [operation(...args)] };
  let outcome;
  try {
    outcome = store.commit(step);
  } catch (error) {
    // Nothing was written. Bad input is reported as the method itself names it (the step's
    // deserialiser names only the operation); every other error loses its step wrapping.
    if (error.code === 'INVALID_INPUT') return store[method](...args);
    throw unwrapOperation(error);
  }
  publish(stepChange(step, outcome));
  return result(outcome.outcomes[0]);
}

/**
 * A write that came as its step's JSON text (wire.js), with `operation` what its change notice
 * reads. Text the store refuses goes on as the objects it reads back into, exactly the call's
 * arguments: bad input is reported as those would be.
 */
function writeText(method, step, operation, requestId) {
  // Checked before the commit: a change notice that cannot be built after it would fail a
  // write that committed.
  if (!TEXT_WRITES.has(method) || operation?.op !== WRITE_OPERATIONS[method].operation().op) {
    throw new RunStoreError('INVALID_INPUT', `${String(method)} cannot travel as text with this operation`, { field: 'method' });
  }
  let outcome;
  try {
    outcome = store.__commitText(step);
  } catch (raw) {
    const error = toRunStoreError(raw);
    if (error.code !== 'INVALID_INPUT') throw unwrapOperation(error);
    const sent = JSON.parse(step).operations[0];
    return writeAsStep(method, PARAMETERS[method].map((name) => sent[name]), requestId);
  }
  publish(stepChange({ requestId, operations: [operation] }, outcome));
  return WRITE_OPERATIONS[method].result(outcome.outcomes[0]);
}

function unwrapOperation(error) {
  if (error.operation === 0) {
    delete error.operation;
    error.message = error.message.replace(/^operation 0 of the step failed: /, '');
  }
  return error;
}

/** Runs one call on the open store and announces what it changed. */
function run({ method, args, requestId, step, operation }) {
  if (!allowed.has(method)) {
    throw new RunStoreError('INVALID_INPUT', `unknown method ${String(method)}`, { field: 'method' });
  }
  if (!store) throw new RunStoreError('BACKEND', 'the store is closed');
  if (typeof step === 'string') return writeText(method, step, operation, requestId ?? null);
  if (!Array.isArray(args)) args = [];
  if (method in WRITE_OPERATIONS && !PLAIN_WRITES.has(method)) return writeAsStep(method, args, requestId ?? null);
  if (method === 'readHistory') return new JsonText(store.__historyText(args[0], 0, args[1]));
  if (method === 'readHistoryFrom') return new JsonText(store.__historyText(args[0], args[1], args[2]));
  const value = store[method](...args);
  if (method === 'commit') publish(stepChange(args[0], value));
  else if (PLAIN_WRITES.has(method)) publish(plainChange(method, args));
  else if (method === 'importDatabase') publish(importChange(args[1], value));
  return value;
}

/**
 * A history page as the store's JSON text: it crosses to the page as one string, parsed there
 * once (batch.js, settleCall), where the parsed page would be structured-cloned object by object.
 */
class JsonText {
  constructor(text) {
    this.text = text;
  }
}

/**
 * The answer to a call with `id` that returned `value`. The change it made goes with it to a
 * private store's page (one message per call, not two; the page's subscribers hear of it
 * before the call's promise settles); a shared store's goes to every tab after it.
 */
function answerTo(id, value) {
  const answer = value instanceof JsonText ? { id, ok: true, json: value.text } : { id, ok: true, value };
  if (announced && shared) unsent.push(announced);
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
    if (store?.__unflushed()) {
      const change = announced;
      announced = null;
      return answerFlushed(id, value, change);
    }
    return answerTo(id, value);
  } catch (error) {
    announced = null;
    return failed(id, error);
  }
}

/**
 * The answer to a call once its write is stored. A failed flush undid the write (the store
 * holds what IndexedDB holds): the call fails with the flush's error and announces nothing.
 */
async function answerFlushed(id, value, change) {
  try {
    await store.flush();
  } catch (error) {
    return failed(id, error);
  }
  announced = change;
  return answerTo(id, value);
}

/** Answers `message` now, or once its write is stored: then resolves when it was answered. */
function respond(message, answer) {
  const result = answerNow(message);
  if (result instanceof Promise) return result.then(answer);
  answer(result);
}

/** Opens or closes: the calls that need to wait for a promise. */
function answerLater({ id, method, args }) {
  const list = Array.isArray(args) ? args : [];
  const done = method === 'open' ? open(...list) : close();
  return done.then(
    (value) => answerTo(id, value),
    (error) => failed(id, error),
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

function enqueue(message, answer) {
  if (message.method === 'warm') {
    if (!openBegun) warm(...(Array.isArray(message.args) ? message.args : []));
    answer({ id: message.id, ok: true, value: undefined });
    return;
  }
  const later = message.method === 'open' || message.method === 'close';
  if (later) afterWaiting(async () => answer(await answerLater(message)));
  else if (waiting) afterWaiting(() => respond(message, answer));
  else {
    // A write that is being stored holds back the calls after it.
    const storing = respond(message, answer);
    if (storing) afterWaiting(() => storing);
  }
}

/** Sends `answer` with `post`, then what its calls changed to the other tabs. */
function answerAndBroadcast(post) {
  return (answer) => {
    post(answer);
    broadcastChanges();
  };
}

/** Runs the calls of one message in order; a batch is answered in one message once all ran. */
function receive(data, post) {
  const send = answerAndBroadcast(post);
  if (!Array.isArray(data?.batch)) {
    enqueue(data ?? {}, send);
    return;
  }
  const answers = [];
  for (const message of unbatch(data)) enqueue(message ?? {}, (answer) => answers.push(answer));
  if (waiting) afterWaiting(() => send({ batch: answers }));
  else send({ batch: answers });
}

self.addEventListener('message', (event) => receive(event.data, (answer) => self.postMessage(answer)));
