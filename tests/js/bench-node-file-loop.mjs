// How long a store in a file holds Node's event loop, the figure behind running it in the
// process rather than in a worker_threads worker (docs/node.md, "A store in a file"): commits
// through the client (`RunStore`, in the process) beside the same commits sent to
// `runstore/core` in a worker thread, at durability 'full', with the event loop's delay
// measured while they run (perf_hooks.monitorEventLoopDelay). Figures only.
// Usage: node tests/js/bench-node-file-loop.mjs [commits (500)]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { RunStore } from '../../js/index.js';

const COMMITS = Number(process.argv[2] ?? 500);
const directory = mkdtempSync(join(tmpdir(), 'runstore-bench-loop-'));
const event = { type: 'custom', name: 'x', recordedAt: 1, data: { n: 1 } };

/** Runs `commit(seq)` COMMITS times in turn; answers commits/s and the loop's delay in ms. */
async function measured(commit) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const started = performance.now();
  for (let seq = 0; seq < COMMITS; seq++) await commit(seq);
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  const ms = (ns) => (ns / 1e6).toFixed(2);
  return { perSecond: Math.round(COMMITS / seconds), p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) };
}

let runs = 0;

async function inProcess() {
  const store = await RunStore.open(`loop-in-process-${runs++}`, { persistence: 'file', directory });
  const figures = await measured((seq) => store.append('wf', [event], seq));
  await store.close();
  return figures;
}

async function inWorker() {
  const source = `
    const { parentPort, workerData } = await import('node:worker_threads');
    const { init, RunStoreCore } = await import(workerData.core);
    await init();
    const store = await RunStoreCore.open(workerData.name, { persistence: 'file', directory: workerData.directory });
    parentPort.on('message', ({ seq, event }) => {
      if (seq < 0) return store.close().then(() => parentPort.postMessage('closed'));
      parentPort.postMessage(store.append('wf', [event], seq));
    });
    parentPort.postMessage('ready');
  `;
  const core = new URL('../../js/core.js', import.meta.url).href;
  const worker = new Worker(source, { eval: true, workerData: { core, directory, name: `loop-worker-${runs++}` } });
  const next = () => new Promise((resolve) => worker.once('message', resolve));
  await next();
  const figures = await measured((seq) => {
    const answered = next();
    worker.postMessage({ seq, event });
    return answered;
  });
  worker.postMessage({ seq: -1 });
  await next();
  await worker.terminate();
  return figures;
}

try {
  console.log(`${COMMITS} appends at durability 'full', one at a time, each awaited; event loop delay in ms`);
  for (const [where, run] of [['client, store in the process', inProcess], ['core in a worker thread', inWorker], ['client, store in the process', inProcess]]) {
    const { perSecond, p50, p99, max } = await run();
    console.log(`${where.padEnd(30)} ${String(perSecond).padStart(6)} appends/s   loop delay p50 ${p50}  p99 ${p99}  max ${max}`);
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
