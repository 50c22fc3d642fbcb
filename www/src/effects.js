// Side effects under idempotency keys, recorded in the store's effect ledger before and after
// each call:
//
//   prepared ──► started ──► completed { output }      (final: never called again)
//                   │   └──► failed { error }          (an activity may retry: started again)
//                   └─ page reloaded mid-call ─► outcomeUnknown ──► started (re-issued, same key)
//
// A call found `started` when the page loads was cut off by the reload: it may or may not have
// reached the service. Every tool here is idempotent by key (the service applies a key once and
// replays its answer), so the runner re-issues it with the same key; a tool that is not would
// have to stop there and ask a person.

import { readAll } from './pages.js';

const inFlight = new Map();

/** On load, before anything runs: every effect left `started` by the previous page becomes `outcomeUnknown`. */
export async function markInterruptedEffects(store) {
  const unresolved = await readAll((page) => store.listUnresolvedEffects(page));
  let marked = 0;
  for (const effect of unresolved) {
    if (effect.status.type !== 'started') continue;
    await transition(store, effect, { type: 'outcomeUnknown' });
    marked++;
  }
  return marked;
}

/**
 * Performs `call(request)` at most once per (capability, key) as far as the ledger can tell,
 * and returns `{ output, issued, reconciled }`: `issued` counts the requests sent under this
 * key, `reconciled` says one of them was cut off and the answer came from re-issuing it.
 * Concurrent calls for one key in this page share one performance.
 */
export function performOnce(store, effect, call) {
  const id = `${effect.capability} ${effect.key}`;
  if (!inFlight.has(id)) {
    const run = perform(store, effect, call).finally(() => inFlight.delete(id));
    inFlight.set(id, run);
  }
  return inFlight.get(id);
}

async function perform(store, { capability, key, request, idempotent = true }, call) {
  let record = (await store.findEffect(capability, key)) ?? (await prepare(store, capability, key, request));
  let reconciled = record.request.reconciled ?? false;
  switch (record.status.type) {
    case 'completed':
      return { output: record.status.output, issued: record.request.issued, reconciled };
    case 'started':
      // Not ours: this page never leaves one behind (see inFlight). The previous page did.
      record = await transition(store, record, { type: 'outcomeUnknown' });
    // falls through
    case 'outcomeUnknown':
      if (!idempotent) throw new Error(`${capability} ${key}: outcome unknown and the tool is not idempotent`);
      reconciled = true;
      break;
    default: // prepared, or failed (an activity's retry)
  }
  record = await transition(store, record, { type: 'started' }, { issued: record.request.issued + 1, reconciled });
  let output;
  try {
    output = await call(record.request.args);
  } catch (error) {
    await transition(store, record, { type: 'failed', error: String(error.message ?? error) });
    throw error;
  }
  await transition(store, record, { type: 'completed', output });
  return { output, issued: record.request.issued, reconciled };
}

async function prepare(store, capability, key, args) {
  const record = {
    effectId: `${capability}:${key}`,
    capabilityId: capability,
    idempotencyKey: key,
    revision: 0,
    request: { args, issued: 0, reconciled: false },
    status: { type: 'prepared' },
    updatedAt: Date.now(),
  };
  await store.compareAndSwapEffect(record, null);
  return record;
}

/** Writes the next revision of `record` under a revision check (CONFLICT if someone else did). */
async function transition(store, record, status, request = {}) {
  const next = {
    ...record,
    revision: record.revision + 1,
    request: { ...record.request, ...request },
    status,
    updatedAt: Date.now(),
  };
  await store.compareAndSwapEffect(next, record.revision);
  return next;
}
