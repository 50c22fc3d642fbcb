// The package under Bun, as an app there uses it (tests/app's installed tarball), on the file
// medium: `RunStore` (its store in Bun's web Worker), `runstore/core` and `runstore/workflow`
// on a store in a file; a second opener is BUSY; what one runtime wrote the next reads.
// Run by scripts/test-js.sh: tests/bun/node_modules/.bin/bun tests/bun/file.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PACKAGE = new URL('../app/node_modules/runstore/', import.meta.url);
const { RunStore } = await import(new URL('js/index.js', PACKAGE));
const { init, RunStoreCore } = await import(new URL('js/core.js', PACKAGE));
const { defineWorkflow, WorkflowEngine } = await import(new URL('js/workflow.js', PACKAGE));

const directory = mkdtempSync(join(tmpdir(), 'runstore-bun-'));
const event = (name) => ({ type: 'custom', name, recordedAt: 1 });
const refusal = (promise) => promise.then(() => 'opened', (error) => error.code);

// Bun counts `process.uptime()` in a Worker from the worker's start: a worker started this
// late told its lock apart from the main thread's by that, and the main thread opened the
// store a second time. Linux's start time of the process is the same in every thread.
const started = Date.now();
while (Date.now() - started < 600);

try {
  // The client: a store in a file, held alone.
  const store = await RunStore.open('orders', { persistence: 'file', directory });
  assert.equal(store.persistence, 'file');
  assert.equal(await store.append('order-1', [event('placed')], 0), 1);
  assert.equal(await refusal(RunStore.open('orders', { persistence: 'file', directory })), 'BUSY');
  await init();
  assert.equal(await refusal(RunStoreCore.open('orders', { persistence: 'file', directory })), 'BUSY');
  await store.close();
  assert.deepEqual(readdirSync(directory), ['orders.db']);

  // runstore/core on what the client wrote, and a workflow on it.
  const core = await RunStoreCore.open('orders', { directory });
  assert.equal(core.persistence, 'file');
  assert.equal(core.head('order-1'), 1);
  const double = defineWorkflow('double', async (ctx, { n }) => (await ctx.step('twice', () => n * 2)) + 1);
  const engine = await WorkflowEngine.start(core, { workflows: [double] });
  const run = await engine.start(double, { id: 'double-1', input: { n: 20 } });
  assert.equal(await run.result(), 41);
  await engine.stop();
  await core.close();

  // Node opens what Bun wrote.
  const node = spawnSync('node', ['--input-type=module', '-e', `
    const { init, RunStoreCore } = await import(${JSON.stringify(new URL('js/core.js', PACKAGE).href)});
    await init();
    const store = await RunStoreCore.open('orders', { persistence: 'file', directory: ${JSON.stringify(directory)} });
    console.log(store.head('order-1'), store.head('double-1') > 0);
    await store.close();
  `], { encoding: 'utf8' });
  assert.equal(node.stdout.trim(), '1 true', node.stderr);
  console.log(`Bun ${Bun.version}: the store in a file through RunStore, runstore/core and runstore/workflow: ok`);
} finally {
  rmSync(directory, { recursive: true, force: true });
}
