// The workload, written once and run by every side, in Node, in the page and in its workers:
// workflows of STEPS small steps, each step's body returning a small JSON value, started one
// at a time or several at once; and the same steps written as the store commits an app would
// make by hand. Every step body goes through `stepBody`, which stamps the time it ran: the gaps
// between the bodies of one workflow are its per-step latency, whatever the side.
import { defineWorkflow, WorkflowEngine } from 'runstore/workflow';

export const STEPS = 10;

/** What a step's body returns: about 160 bytes as JSON. */
export const stepValue = (workflowId, i) => ({
  workflowId,
  step: i,
  ok: true,
  amount: 1999,
  currency: 'EUR',
  ref: 'ch_3NqL8XKf2b9sQz',
  card: 'tok_visa_4242',
  customer: 'cus_9s8d7f',
});

/** When each workflow's step bodies ran (performance.now()), by workflow id. */
const bodyTimes = new Map();

/** The body of step `i` of `workflowId` on every side: stamps the time and returns its value. */
export async function stepBody(workflowId, i) {
  let times = bodyTimes.get(workflowId);
  if (!times) bodyTimes.set(workflowId, (times = []));
  times.push(performance.now());
  return stepValue(workflowId, i);
}

/**
 * Runs `count` workflows through `runOne(workflowId)`, `lanes` at a time (each lane starts its
 * next workflow when its last one returned). Resolves to `{ ms, count, steps, stepMs }`:
 * `stepMs` is the mean gap between two consecutive step bodies of one workflow.
 */
export async function measure(runOne, { count, lanes, prefix }) {
  bodyTimes.clear();
  let next = 0;
  const lane = async () => {
    while (next < count) await runOne(`${prefix}-${next++}`);
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: lanes }, lane));
  const ms = performance.now() - started;
  let gaps = 0;
  let total = 0;
  for (const times of bodyTimes.values()) {
    if (times.length !== STEPS) throw new Error(`a workflow ran ${times.length} step bodies, not ${STEPS}`);
    total += times.at(-1) - times[0];
    gaps += times.length - 1;
  }
  if (bodyTimes.size !== count) throw new Error(`${bodyTimes.size} workflows ran, not ${count}`);
  bodyTimes.clear();
  return { ms, count, steps: count * STEPS, stepMs: total / gaps };
}

// ----- runstore/workflow -----

export const tenSteps = defineWorkflow('ten-steps', async (ctx) => {
  let last = null;
  for (let i = 0; i < STEPS; i++) last = await ctx.step(`s${i}`, () => stepBody(ctx.workflowId, i));
  return last;
});

/** The engine on `store` (a RunStore or a RunStoreCore): `runOne` starts a run and awaits its result. */
export async function engineSide(store) {
  const engine = await WorkflowEngine.start(store, { workflows: [tenSteps] });
  return {
    async runOne(workflowId) {
      const handle = await engine.start(tenSteps, { id: workflowId });
      const result = await handle.result();
      if (result?.step !== STEPS - 1) throw new Error(`workflow ${workflowId} returned ${JSON.stringify(result)}`);
    },
    close: () => engine.stop(),
  };
}

// ----- the same steps as store commits written by hand -----

/**
 * The leanest hand-written exactly-once steps on the same store, with the engine's events and
 * ledger records: one commit per step, holding the previous step's result (its event and its
 * ledger record moved to `completed`) and this step's start (its event and its ledger record,
 * `started`); then the body runs. The first commit holds the run's `started` event, the last
 * the last result and `completed`: STEPS + 1 commits a workflow, each under the journal's
 * expected head. After a crash the journal and the ledger say which body may have run (and
 * under which key and attempt), as with the engine; what it does not write is the
 * visibility record, a request id per commit, and what the engine reads to load and replay.
 */
export function handSide(store) {
  return { runOne: (workflowId) => handWorkflow(store, workflowId), close() {} };
}

const custom = (name, data, recordedAt) => ({ type: 'custom', name, data, recordedAt });

function ledger(workflowId, runId, i, revision, status) {
  const key = `${workflowId}/${runId}/s${i}`;
  const record = {
    effectId: key,
    capabilityId: `s${i}`,
    idempotencyKey: key,
    revision,
    request: { workflowId, runId, step: `s${i}`, attempt: 1 },
    status,
    updatedAt: Date.now(),
  };
  return { op: 'compareAndSwapEffect', record, expectedRevision: revision === 0 ? null : revision - 1 };
}

async function handWorkflow(store, workflowId) {
  const runId = crypto.randomUUID();
  const now = Date.now();
  const start = (i) => custom('step', { n: i, step: `s${i}`, attempt: 1 }, Date.now());
  let events = [{ type: 'started', workflowType: 'ten-steps', runId, recordedAt: now, data: {} }, start(0)];
  let operations = [ledger(workflowId, runId, 0, 0, { type: 'started' })];
  let head = 0;
  let value = null;
  for (let i = 0; i < STEPS; i++) {
    await store.commit({ operations: [{ op: 'append', workflowId, events, expectedSeq: head }, ...operations] });
    head += events.length;
    value = await stepBody(workflowId, i);
    events = [custom('stepDone', { n: i, result: value }, Date.now())];
    operations = [ledger(workflowId, runId, i, 1, { type: 'completed', output: value })];
    if (i + 1 < STEPS) {
      events.push(start(i + 1));
      operations.push(ledger(workflowId, runId, i + 1, 0, { type: 'started' }));
    }
  }
  events.push({ type: 'completed', recordedAt: Date.now(), data: { result: value } });
  await store.commit({ operations: [{ op: 'append', workflowId, events, expectedSeq: head }, ...operations] });
}

// ----- replay -----

/** N steps, then a durable timer an hour long: the run a restarted engine must replay. */
export const longRun = defineWorkflow('long-run', async (ctx, { steps }) => {
  for (let i = 0; i < steps; i++) await ctx.step(`s${i}`, () => stepValue(ctx.workflowId, i));
  await ctx.sleep('end', 3_600_000);
});

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check, everyMs) {
  while (!(await check())) await pause(everyMs);
}

/**
 * Records a run of `steps` steps on `store` that ends in a sleep, stops its engine and starts a
 * new one: resolves to `{ liveMs, heapBytes, readMs, readHeapBytes, events }`. The new engine is
 * live once it records a signal sent at its start (a run's inbox rows wait until its replay is
 * done); the run's head is polled every few ms for it. `heapBytes` is the JS heap the live
 * run holds after a full GC (`heap()` after `gc()`), against the heap before the engine started.
 * Beside it, in the same store: the time to read the run's history through the store, and the
 * heap its events take held as objects, the floor under a replay.
 */
export async function measureReplay(store, steps, workflowId, { gc, heap }) {
  let engine = await WorkflowEngine.start(store, { workflows: [longRun] });
  await engine.start(longRun, { id: workflowId, input: { steps } });
  await until(async () => (await engine.describe(workflowId)).waiting === 'sleep end', 20);
  await engine.stop();
  engine = null;

  await gc();
  const heapBefore = heap();
  const started = performance.now();
  engine = await WorkflowEngine.start(store, { workflows: [longRun] });
  const { head } = await store.workflowSummary(workflowId);
  await engine.signal(workflowId, 'ping', null);
  await until(async () => (await store.workflowSummary(workflowId)).head > head, 2);
  const liveMs = performance.now() - started;
  await gc();
  const heapBytes = heap() - heapBefore;
  const { waiting } = await engine.describe(workflowId);
  if (waiting !== 'sleep end') throw new Error(`the replayed run waits on ${waiting}`);
  await engine.stop();
  engine = null;

  await gc();
  const readBefore = heap();
  const readStarted = performance.now();
  const events = [];
  let cursor = null;
  do {
    const page = await store.readHistoryFrom(workflowId, 1, { limit: 10_000, cursor });
    events.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  const readMs = performance.now() - readStarted;
  await gc();
  const readHeapBytes = heap() - readBefore;
  return { liveMs, heapBytes, readMs, readHeapBytes, events: events.length };
}
