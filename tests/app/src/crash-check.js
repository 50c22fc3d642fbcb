// What the crash tests check after a writer was killed mid-step (the browser's crash worker,
// tests/js/node-file-crash.test.mjs in Node): how many steps of the plan (crash-plan.js)
// committed, and that every area holds those steps whole and nothing of a later one.
import {
  WORKFLOWS, SETTLE_LAG, TIMER_LAG, CHECKPOINT, EFFECT, VISIBILITY, outboxKey, timerId, requestId,
} from './crash-plan.js';

/** How many steps committed: the checkpoint's revision + 1. */
export function committedSteps(store) {
  try {
    return store.loadCheckpoint(CHECKPOINT).revision + 1;
  } catch (error) {
    if (error.code === 'NOT_FOUND') return 0;
    throw error;
  }
}

/** Re-sends the first step after `acked` when it has a request id, then commits steps from n. */
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
export function check(store, plan, n) {
  const problems = [];
  for (let w = 0; w < WORKFLOWS; w++) {
    checkJournal(store, plan, w, n, problems);
    if (store.head(`wf-${w}`) !== plan.headAfter(n, w)) problems.push(`wf-${w}: head ${store.head(`wf-${w}`)}`);
  }
  for (let k = 0; k < n; k++) checkStep(store, plan, k, n, problems);
  checkLatest(store, n, problems);
  return problems;
}
