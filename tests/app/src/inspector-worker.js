// runstore/core in an app's own worker, with the engine running two `approval` workflows,
// served to the page's inspector (tests/js/inspector.test.mjs) with exposeCore.
import { init, RunStoreCore } from 'runstore/core';
import { exposeCore } from 'runstore/inspector';
import { WorkflowEngine } from 'runstore/workflow';
import { approval } from './inspector-workflows.js';

async function main() {
  await init();
  const core = await RunStoreCore.open('inspector-worker', { persistence: 'memory' });
  const engine = await WorkflowEngine.start(core, { workflows: [approval] });
  for (let i = 0; i < 2; i++) await engine.start(approval, { id: `worker-${i}`, input: { amount: i } });
  exposeCore(core, self, { engine });
  self.postMessage('ready');
}

main().catch((error) => self.postMessage({ failed: String(error?.stack ?? error) }));
