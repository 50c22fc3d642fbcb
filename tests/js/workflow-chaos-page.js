// The page of the workflow chaos run (tests/js/workflow-chaos.mjs), served as an ES module
// beside a copy of the packed package, which it imports by name through an import map as an
// app would. Every tab opens the shared store and starts its engine; only the leader's runs the
// workflows. Every step body calls the counting service with its idempotency key and returns
// what the service answers. The query names the tab, the store and the service.
import { RunStore } from 'runstore';
import { defineWorkflow, WorkflowEngine } from 'runstore/workflow';

const query = new URLSearchParams(location.search);
const TAB = query.get('tab');
const SERVICE = query.get('service');
const STORE = query.get('store');

/**
 * Every step may take 10 attempts: a body cut off by a kill has spent one, and this run kills
 * leaders every 0.5-3 s, so a step may be cut off more than the default 3 times.
 */
const RETRY = { maxAttempts: 10, initialIntervalMs: 50 };

/** A step whose body calls the counting service, saying which workflow, step and tab it is. */
function step(ctx, name) {
  return ctx.step(
    name,
    async ({ idempotencyKey, attempt, signal }) => {
      const call = { key: idempotencyKey, attempt, tab: TAB, workflowId: ctx.workflowId, step: name };
      // A text/plain body: a simple cross-origin request, without a preflight.
      const response = await fetch(`${SERVICE}/call`, { method: 'POST', body: JSON.stringify(call), signal });
      if (!response.ok) throw new Error(`the service answered ${response.status}`);
      return (await response.json()).value;
    },
    { retry: RETRY },
  );
}

const shipment = defineWorkflow('chaos-ship', async (ctx, { sleepMs }) => {
  const pack = await step(ctx, 'pack');
  await ctx.sleep('truck', sleepMs);
  const send = await step(ctx, 'send');
  return { pack, send };
});

/**
 * Steps one after another and in parallel, a retried step (the service fails its first call),
 * durable sleeps, signals (one awaited with a timeout that must not fire, then `items` more,
 * buffered if they come first) and an awaited child. The result holds every step's answer and
 * every signal's payload, for the checker to recompute.
 */
const order = defineWorkflow('chaos-order', async (ctx, input) => {
  const quote = await step(ctx, 'quote');
  const [stock, price, tax] = await Promise.all(['stock', 'price', 'tax'].map((name) => step(ctx, name)));
  await ctx.sleep('cool-off', input.sleepMs);
  const approval = await ctx.waitForSignal('approve', { timeoutMs: 600_000 });
  const flaky = await step(ctx, 'flaky');
  const items = [];
  for (let k = 0; k < input.items; k++) items.push(await ctx.waitForSignal('item'));
  const acks = await Promise.all(items.map((_, k) => step(ctx, `ack-${k}`)));
  const ship = await ctx.child(shipment, { input: { sleepMs: input.sleepMs } });
  await ctx.sleep('settle', input.sleepMs);
  const receipt = await step(ctx, 'receipt');
  return { steps: { quote, stock, price, tax, flaky, acks, receipt }, approval, items, ship };
});

/** This tab's store and engine; the driver calls these through page.evaluate. */
async function open() {
  const store = await RunStore.open(STORE, { persistence: 'opfs' });
  const onError = (error, { workflowId }) => console.debug(`chaos-error ${error?.code ?? error?.name} ${workflowId} ${error?.message}`);
  const engine = await WorkflowEngine.start(store, { workflows: [order, shipment], onError });
  return { store, engine };
}

const opened = TAB === 'reader' ? null : open();

window.chaos = {
  ready: opened?.then(() => true),
  /** Whether this tab leads the store and its engine runs the workflows. */
  leads: async () => {
    const { store, engine } = await opened;
    return store.isLeader === true && engine.running;
  },
  start: async (id, input) => {
    await (await opened).engine.start(order, { id, input });
    return true;
  },
  signal: async (id, name, payload, signalId) => (await opened).engine.signal(id, name, payload, { signalId }),
  /** The status of each workflow (`completed`, `running`, ...). */
  statuses: async (ids) => {
    const { store } = await opened;
    return Promise.all(ids.map((id) => store.workflowSummary(id).then((s) => s.status, (error) => error.code)));
  },
  readBack,
};

/**
 * Run in a fresh page once the tabs are gone: the journals of the workflows `ids` and of
 * their children, and the effect-ledger record of every step they issued.
 */
async function readBack(ids) {
  const store = await RunStore.open(STORE, { persistence: 'opfs', requestTimeoutMs: 60_000 });
  const journals = {};
  const effects = {};
  const queue = [...ids];
  while (queue.length > 0) {
    const id = queue.shift();
    const events = [];
    for (let cursor = null; ; ) {
      const page = await store.readHistory(id, { limit: 1000, cursor });
      events.push(...page.items);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    journals[id] = events.map((e) => ({ seq: e.seq, kind: e.type === 'custom' ? e.name : e.type, data: e.data ?? null, at: e.recordedAt, runId: e.runId ?? null }));
    const runId = events[0]?.runId;
    for (const event of events) {
      if (event.name === 'child') queue.push(event.data.workflowId);
      if (event.name === 'step') {
        const key = `${id}/${runId}/${event.data.step}`;
        effects[key] = await store.loadEffect(key);
      }
    }
  }
  await store.close();
  return { journals, effects };
}
