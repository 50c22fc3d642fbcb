// runstore in Node: `node examples/node-quickstart.mjs` in a checkout once the package is built
// (`npm run build`, or after `npm start` / `npm test`); in an app, `npm install runstore` and the
// same imports. The store runs in this process on memory (runstore/core finds its wasm by
// itself). A small order workflow journals its steps, keeps a checkpoint, and calls a payment
// service under an idempotency key; the runner stops right after the charge, before its step
// committed, as if the process died there, and a new one resumes from the checkpoint: it runs
// the charge step again, and the effect ledger answers it without charging twice.
import { init, RunStoreCore, RunStoreError } from 'runstore/core';

await init();
const store = await RunStoreCore.open('quickstart', { persistence: 'memory' });
const charges = []; // the outside world: what the payment service received

/** Runs `order-42` from its checkpoint, to the end or (`dieAfterCharge`) until the charge call returned. */
async function runOrder({ dieAfterCharge }) {
  let checkpoint = null;
  try {
    checkpoint = store.loadCheckpoint('order-42');
    console.log(`resumed from checkpoint: step ${checkpoint.state.step} (revision ${checkpoint.revision})`);
  } catch (error) {
    if (!(error instanceof RunStoreError && error.code === 'NOT_FOUND')) throw error;
  }
  let step = checkpoint?.state.step ?? 0;
  let revision = checkpoint?.revision ?? null;
  const steps = ['reserve', 'charge', 'ship'];
  for (; step < steps.length; step += 1) {
    const name = steps[step];
    if (name === 'charge') {
      await chargeOnce(1999);
      if (dieAfterCharge) return console.log('runner stopped after the charge, before its step committed');
    }
    const now = Date.now();
    const events = step === 0
      ? [{ type: 'started', workflowType: 'order', runId: 'run-1', recordedAt: now }, { type: 'custom', name, recordedAt: now }]
      : [{ type: 'custom', name, recordedAt: now }];
    // The step's events and the checkpoint they lead to commit together, or not at all.
    const head = store.head('order-42');
    store.commit({
      operations: [
        { op: 'append', workflowId: 'order-42', expectedSeq: head, events },
        {
          op: 'compareAndSwapCheckpoint',
          checkpoint: { checkpointId: 'order-42', revision: revision === null ? 0 : revision + 1, state: { step: step + 1 }, updatedAt: now },
          expectedRevision: revision,
        },
      ],
    });
    revision = revision === null ? 0 : revision + 1;
    console.log(`step ${step + 1} committed: ${name}`);
  }
  store.append('order-42', [{ type: 'completed', recordedAt: Date.now() }], store.head('order-42'));
}

/** A side effect under an idempotency key: recorded `started`, then `completed` with its output. */
async function chargeOnce(amount) {
  const done = store.findEffect('payments', 'order-42/charge');
  if (done?.status.type === 'completed') return console.log('charge: already done, not sent again');
  const effect = { effectId: 'order-42/charge', capabilityId: 'payments', idempotencyKey: 'order-42/charge', request: { amount } };
  store.compareAndSwapEffect({ ...effect, revision: 0, status: { type: 'started' }, updatedAt: Date.now() }, null);
  charges.push(amount);
  store.compareAndSwapEffect({ ...effect, revision: 1, status: { type: 'completed', output: { receipt: 'r-1' } }, updatedAt: Date.now() }, 0);
}

await runOrder({ dieAfterCharge: true }); // reserve, charge, and the runner is gone
await runOrder({ dieAfterCharge: false }); // a new runner: resumes at the charge step
const summary = store.workflowSummary('order-42');
const history = store.readHistory('order-42').items.map((event) => event.name ?? event.type);
console.log(`order-42 is ${summary.status} after ${summary.head} events: ${history.join(', ')}`);
console.log(`the payment service was charged ${charges.length} time(s)`);
await store.close();
