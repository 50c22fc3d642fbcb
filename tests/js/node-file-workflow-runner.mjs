// A Node process that runs workflows on a store in a file, for tests/js/node-file-workflow.test.mjs,
// which kills it with SIGKILL while they run and starts another on the same file. It starts the
// runs it is given (starting one that exists returns it), awaits each, and prints
// `done <id> <result>` as each completes. Every step calls the counting service
// (workflow-chaos-service.mjs) with its idempotency key.
// Usage: node node-file-workflow-runner.mjs <directory> <service url> <label> <steps> <workflow id>...
import { RunStore } from '../app/node_modules/runstore/js/index.js';
import { defineWorkflow, WorkflowEngine } from '../app/node_modules/runstore/js/workflow.js';

const [directory, service, label, legs, ...ids] = process.argv.slice(2);
const LEGS = Number(legs);

/** Calls the service for one step; its answer is the step's result. */
async function call(ctx, step, { idempotencyKey, attempt }) {
  const body = JSON.stringify({ key: idempotencyKey, attempt, tab: label, workflowId: ctx.workflowId, step });
  const response = await fetch(`${service}/call`, { method: 'POST', body });
  if (!response.ok) throw new Error(`the service answered ${response.status}`);
  return (await response.json()).value;
}

const trip = defineWorkflow('trip', async (ctx) => {
  let total = 0;
  for (let leg = 0; leg < LEGS; leg++) {
    total = (total + (await ctx.step(`leg-${leg}`, (step) => call(ctx, `leg-${leg}`, step), { retry: { maxAttempts: 5 } }))) >>> 0;
    if (leg === 2) await ctx.sleep('rest', 200);
  }
  return total;
});

/**
 * Opens the store, trying again while it is BUSY: a runner killed between creating its lock
 * file and writing its pid leaves a lock that names no process, taken over after 2 s.
 */
async function openStore() {
  for (let waited = 0; ; waited += 100) {
    try {
      return await RunStore.open('trips', { persistence: 'file', directory });
    } catch (error) {
      if (error.code !== 'BUSY' || waited > 5_000) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const store = await openStore();
const engine = await WorkflowEngine.start(store, { workflows: [trip] });
console.log('ready');
await Promise.all(ids.map(async (id) => {
  const run = await engine.start(trip, { id, input: {} });
  console.log(`done ${id} ${await run.result()}`);
}));
await engine.stop();
await store.close();
