// The browser crash test's store worker, through `runstore/core` on OPFS (or the medium the
// page names, see medium.js).
// { mode: 'write', seed, acked, medium }: checks the store the terminated writer left (posting
//   { checked: { n, problems } }), re-sends the first unacknowledged step under its request id,
//   then commits step after step, posting { ack, how } after each commit is stored (`flush`:
//   at once on OPFS, a write to IndexedDB there), until the page terminates it.
// { mode: 'check', seed }: checks the store and posts { checked: { n, problems } }.
import { init, RunStoreCore } from 'runstore/core';
import { onMedium } from './medium.js';
import {
  Plan, WORKFLOWS, SETTLE_LAG, TIMER_LAG, CHECKPOINT, EFFECT, VISIBILITY,
  outboxKey, timerId, requestId,
} from './crash-plan.js';

const NAME = 'crash-steps';

/** Opens the store, backing off while the terminated writer still holds it. */
async function openRetrying(medium) {
  let wait = 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await RunStoreCore.open(NAME, onMedium({ persistence: 'opfs' }, medium));
    } catch (error) {
      if (error.code !== 'BUSY' || attempt === 30) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 500);
    }
  }
}

/** How many steps committed: the checkpoint's revision + 1. */
function committedSteps(store) {
  try {
    return store.loadCheckpoint(CHECKPOINT).revision + 1;
  } catch (error) {
    if (error.code === 'NOT_FOUND') return 0;
    throw error;
  }
}

/** Re-sends the first step after `acked` when it has a request id, then commits steps from n. */
async function write(store, plan, n, acked) {
  const firstUnacked = acked === null ? 0 : acked + 1;
  if (firstUnacked < n && requestId(firstUnacked) !== undefined) {
    const outcome = store.commit(plan.step(firstUnacked));
    if (!outcome.replayed) throw new Error(`step ${firstUnacked} applied twice`);
    await store.flush();
    self.postMessage({ ack: firstUnacked, how: 'replayed' });
  }
  for (let k = n; ; k++) {
    const outcome = store.commit(plan.step(k));
    if (outcome.replayed || JSON.stringify(outcome.outcomes) !== plan.outcomes(k)) {
      throw new Error(`step ${k}: unexpected outcome ${JSON.stringify(outcome)}`);
    }
    const resent = k === firstUnacked && requestId(k) !== undefined;
    await store.flush();
    self.postMessage({ ack: k, how: resent ? 'resent' : 'new' });
    // Back to the event loop, so that terminate() lands between commits as well as in them.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** Every item of a paged listing. */
function readAll(read) {
  const items = [];
  let page = { limit: 10_000 };
  for (;;) {
    const { items: more, nextCursor } = read(page);
    items.push(...more);
    if (nextCursor === null) return items;
    page = { limit: 10_000, cursor: nextCursor };
  }
}

/** Workflow w's whole journal: every step's events at the seqs after its expected head. */
function checkJournal(store, plan, w, n, problems) {
  const history = readAll((page) => store.readHistory(`wf-${w}`, page));
  const expected = [];
  for (let k = w; k < n; k += WORKFLOWS) expected.push(...plan.events(k));
  if (history.length !== expected.length) {
    problems.push(`wf-${w}: ${history.length} events, expected ${expected.length}`);
  }
  history.forEach((event, i) => {
    const want = expected[i];
    if (event.seq !== i + 1 || !want || event.name !== want.name
        || event.data.step !== want.data.step || event.data.i !== want.data.i) {
      problems.push(`wf-${w} seq ${event.seq}: ${JSON.stringify(event)}`);
    }
  });
}

/** Step k: its outbox row, and the outcome recorded under its request id. */
function checkStep(store, plan, k, n, problems) {
  const row = store.outboxRowState(outboxKey(k));
  const status = k + SETTLE_LAG < n ? 'done' : 'pending';
  if (row?.status !== status) problems.push(`step ${k}: outbox row ${JSON.stringify(row)}`);
  const id = requestId(k);
  if (id === undefined) return;
  const record = store.requestOutcome(id);
  if (JSON.stringify(record?.outcomes) !== plan.outcomes(k)) {
    problems.push(`step ${k}: request ${JSON.stringify(record)}`);
  }
}

/** What the steps leave as a whole, and nothing of the steps after n. */
function checkLatest(store, n, problems) {
  const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
  const range = (from, to) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
  const timers = readAll((page) => store.listTimers(page)).map((t) => t.timerId);
  if (!same(timers, range(Math.max(0, n - TIMER_LAG), n).map(timerId))) {
    problems.push(`timers after ${n} steps: ${timers}`);
  }
  const pending = store.listOutbox('pending', { limit: 100 }).items.map((r) => r.dispatchKey);
  if (!same(pending, range(Math.max(0, n - SETTLE_LAG), n).map(outboxKey))) {
    problems.push(`pending rows after ${n} steps: ${pending}`);
  }
  const lastEven = n === 0 ? null : (n - 1) - ((n - 1) % 2);
  const effect = store.loadEffect(EFFECT);
  if ((effect?.request.step ?? null) !== lastEven) problems.push(`effect ${JSON.stringify(effect)}`);
  const lastOdd = n < 2 ? null : (n - 1) % 2 === 1 ? n - 1 : n - 2;
  const record = store.getVisibility(VISIBILITY);
  if ((record?.searchAttributes.step ?? null) !== lastOdd) problems.push(`visibility ${JSON.stringify(record)}`);
  for (const k of [n, n + 1]) {
    if (store.outboxRowState(outboxKey(k)) !== null) problems.push(`step ${k} has an outbox row`);
    const id = requestId(k);
    if (id !== undefined && store.requestOutcome(id).status === 'committed') problems.push(`step ${k} has a request record`);
  }
  const undecodable = store.findUndecodableEvent();
  if (undecodable !== null) problems.push(`undecodable event ${JSON.stringify(undecodable)}`);
}

/** Checks every area once steps 0..n committed; returns the problems found. */
function check(store, plan, n) {
  const problems = [];
  for (let w = 0; w < WORKFLOWS; w++) {
    checkJournal(store, plan, w, n, problems);
    if (store.head(`wf-${w}`) !== plan.headAfter(n, w)) problems.push(`wf-${w}: head ${store.head(`wf-${w}`)}`);
  }
  for (let k = 0; k < n; k++) checkStep(store, plan, k, n, problems);
  checkLatest(store, n, problems);
  return problems;
}

self.onmessage = async ({ data }) => {
  try {
    await init();
    const store = await openRetrying(data.medium);
    const plan = new Plan(data.seed);
    const n = committedSteps(store);
    const checked = { n, problems: check(store, plan, n) };
    if (data.mode === 'check') await store.close();
    self.postMessage({ checked });
    if (data.mode === 'write') await write(store, plan, n, data.acked);
  } catch (error) {
    self.postMessage({ failed: `${error}\n${error?.stack ?? ''}` });
  }
};
