// The dedicated worker that hosts one store for the main-thread RunStore client. Requests are
// answered strictly in order: each message runs to completion (its commit included) before the
// next starts, so a write is acknowledged only once it is durable.
//
// In a shared store this worker belongs to the leader tab: it also answers the other tabs'
// requests (BroadcastChannel `<prefix>requests`, each reply on the asking tab's own channel)
// and announces every commit's changes to all tabs. Otherwise changes go to its own page.
import { init, RunStoreCore } from './core.js';
import { RunStoreError, serializeError } from './errors.js';
import { METHODS, PLAIN_WRITES, WRITE_OPERATIONS, importChange, plainChange, stepChange } from './methods.js';

const allowed = new Set(METHODS);
let store = null;
let queue = Promise.resolve();
/** Set while this worker leads a shared store: { leaderId, prefix, requests, changes, replies }. */
let shared = null;

/** How long a leader keeps retrying while the previous leader's worker still holds the files. */
const TAKEOVER_LIMIT_MS = 15_000;
/** Reply channels kept open at once (one per tab that asked lately). */
const MAX_REPLY_CHANNELS = 32;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens the store. A leader retries BUSY with a growing pause: the previous leader's worker
 * keeps its OPFS handles and pool lock for a moment after its tab went away (up to about 3 s
 * for a worker that was busy), and that is a hand-off, not a conflict.
 */
async function openStore(name, options, lead) {
  await init();
  const started = Date.now();
  for (let pause = 25; ; pause = Math.min(pause * 2, 400)) {
    try {
      return await RunStoreCore.open(name, options);
    } catch (error) {
      if (!lead || error.code !== 'BUSY' || Date.now() - started > TAKEOVER_LIMIT_MS) throw error;
      await sleep(pause);
    }
  }
}

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
  if (store) throw new RunStoreError('INVALID_INPUT', 'this worker has a store open already');
  if (lead) await holdAliveLock(lead.aliveLock);
  store = await openStore(name, options, lead);
  if (lead) startServing(lead);
}

function startServing({ leaderId, prefix }) {
  const requests = new BroadcastChannel(`${prefix}requests`);
  shared = { leaderId, prefix, requests, changes: new BroadcastChannel(`${prefix}changes`), replies: new Map() };
  requests.onmessage = (event) => {
    const message = event.data ?? {};
    if (message.to !== leaderId) return;
    enqueue(message, (answer) => reply(message.from, answer));
  };
}

function reply(clientId, answer) {
  const { replies, prefix } = shared ?? {};
  if (!replies || typeof clientId !== 'string') return;
  let channel = replies.get(clientId);
  if (!channel) {
    if (replies.size >= MAX_REPLY_CHANNELS) {
      const [oldest, stale] = replies.entries().next().value;
      stale.close();
      replies.delete(oldest);
    }
    channel = new BroadcastChannel(`${prefix}reply:${clientId}`);
    replies.set(clientId, channel);
  }
  channel.postMessage(answer);
}

async function close() {
  if (shared) {
    shared.requests.close();
    shared.changes.close();
    for (const channel of shared.replies.values()) channel.close();
    shared = null;
  }
  const closing = store;
  store = null;
  if (closing) {
    await closing.close();
    closing.free();
  }
}

function publish(change) {
  if (!change) return;
  if (shared) shared.changes.postMessage(change);
  else self.postMessage({ change });
}

/** A write with an operation, as a one-operation step under the client's request id. */
function writeOnce(method, args, requestId) {
  const { operation, result } = WRITE_OPERATIONS[method];
  const step = { requestId, operations: [operation(...args)] };
  let outcome;
  try {
    outcome = store.commit(step);
  } catch (error) {
    // Nothing was written. Bad input is reported as the method itself names it (the step's
    // deserialiser names only the operation); every other error loses its step wrapping.
    if (error.code === 'INVALID_INPUT') return run(method, args);
    throw unwrapOperation(error);
  }
  publish(stepChange(step, outcome));
  return result(outcome.outcomes[0]);
}

function unwrapOperation(error) {
  if (error.operation === 0) {
    delete error.operation;
    error.message = error.message.replace(/^operation 0 of the step failed: /, '');
  }
  return error;
}

/** Runs one method on the open store and announces what it changed. */
function run(method, args, requestId) {
  if (!allowed.has(method)) {
    throw new RunStoreError('INVALID_INPUT', `unknown method ${String(method)}`, { field: 'method' });
  }
  if (!store) throw new RunStoreError('BACKEND', 'the store is closed');
  if (requestId && method in WRITE_OPERATIONS) return writeOnce(method, args, requestId);
  const value = store[method](...args);
  if (method === 'commit') publish(stepChange(args[0], value));
  else if (PLAIN_WRITES.has(method)) publish(plainChange(method, args));
  else if (method === 'importDatabase') publish(importChange(args[1], value));
  return value;
}

async function handle({ method, args, requestId }) {
  const list = Array.isArray(args) ? args : [];
  if (method === 'open') return open(...list);
  if (method === 'close') return close();
  return run(method, list, requestId);
}

function enqueue(message, answer) {
  const { id } = message;
  queue = queue
    .then(() => handle(message))
    .then(
      (value) => answer({ id, ok: true, value }),
      (error) => answer({ id, ok: false, error: serializeError(error) }),
    );
}

self.addEventListener('message', (event) => enqueue(event.data ?? {}, (answer) => self.postMessage(answer)));
