// A device of the lease checker (tests/js/sync-leases-check.test.mjs), in a process of its own
// so that the checker can pause it (SIGSTOP, as a laptop's lid closes) and wake it later: the
// package's store (runstore/core in Node, on memory), its workflow engine with leases, and the
// app's sync passes, every SYNC_EVERY_MS, under the engine's leases. Its wall clock is off by
// `skewMs`. It tells the checker, over IPC:
// - `grant`: each lease answer it received (the epoch and the server's expiry);
// - `effect`: each step body as it starts (the run, the step, the epoch held, the true time);
// - `push`: each push the server admitted (the epoch it was sent under, the true time it was sent);
// - `conflict`: each workflow a sync pass reported apart, with its code.
// It takes `start` (a run), `network` (up or down) and `report` (a last pass, then the
// histories it holds) from the checker.
import { openMemoryStore } from './node-store.mjs';

// The package's js/, or (LEASE_CHECK_JS, a folder's file URL) a changed copy that
// tests/js/sync-controls.test.mjs runs to show that the checker fails on a known defect.
const js = process.env.LEASE_CHECK_JS ?? new URL('../../js/', import.meta.url).href;
const { defineWorkflow, WorkflowEngine } = await import(new URL('workflow.js', js).href);
const { syncStore } = await import(new URL('sync.js', js).href);

const { name, url, token, namespace, ttlMs, skewMs, steps, stepGapMs, syncEveryMs } = JSON.parse(process.argv[2]);
/** How long one of the app's passes may take. */
const PASS_MS = 10_000;
const trueNow = Date.now.bind(Date);
Date.now = () => trueNow() + skewMs;

const network = { up: true };
async function deviceFetch(input, init) {
  if (!network.up) throw new TypeError(`${name} is cut off`);
  const sentAt = trueNow();
  const response = await fetch(input, init);
  const path = String(input);
  if (response.ok && path.endsWith('/push')) {
    const { workflowId, lease } = JSON.parse(init.body);
    process.send({ kind: 'push', device: name, workflowId, epoch: lease?.epoch ?? 0, sentAt });
  }
  if (response.ok && /\/workflows\/[^/]+\/lease$/.test(path)) {
    const lease = await response.clone().json();
    const workflowId = decodeURIComponent(path.split('/workflows/')[1].split('/')[0]);
    process.send({ kind: 'grant', device: name, workflowId, holder: lease.holder, epoch: lease.epoch, expiresAt: lease.expiresAt });
  }
  return response;
}

let engine = null;
const chain = defineWorkflow('chain', async (ctx) => {
  const results = [];
  for (let step = 1; step <= steps; step += 1) {
    results.push(await ctx.step(`step-${step}`, async () => {
      const lease = await engine.leases(ctx.workflowId);
      const effect = { device: name, step, epoch: lease?.epoch ?? null };
      process.send({ kind: 'effect', workflowId: ctx.workflowId, ...effect, at: trueNow() });
      return effect;
    }));
    await ctx.sleep(`gap-${step}`, stepGapMs);
  }
  return results;
});

const store = await openMemoryStore(name);
const settings = { url, token, namespace, fetch: deviceFetch };
engine = await WorkflowEngine.start(store, {
  workflows: [chain],
  leases: { ...settings, ttlMs },
  onError: (error) => process.send({ kind: 'error', device: name, code: error?.code ?? null, message: String(error?.message ?? error) }),
});

/** One pass under the engine's leases; the workflows it reports apart go to the checker. */
async function pass() {
  // A pass that hangs (an answer lost with its connection kept) is given up, as an app would.
  const summary = await syncStore(store, { ...settings, leases: engine.leases, signal: AbortSignal.timeout(PASS_MS) });
  for (const error of summary.conflicts) {
    process.send({ kind: 'conflict', device: name, workflowId: error.workflowId, code: error.code, at: trueNow() });
  }
  return summary;
}

let syncing = true;
(async () => {
  while (syncing) {
    await pass().catch(() => {}); // out of reach, or cut: the next pass tries again
    await new Promise((resolve) => setTimeout(resolve, syncEveryMs));
  }
})();

/** The histories this store holds of `ids`, as the checker compares them: `[seq, type, name, result]`. */
async function histories(ids) {
  const held = {};
  for (const id of ids) {
    const { items } = await store.readHistoryFrom(id, 1, { limit: 10_000 });
    held[id] = items.map((e) => [e.seq, e.type, e.name ?? null, e.data?.result ?? null]);
  }
  return held;
}

process.on('message', async (message) => {
  try {
    if (message.kind === 'start') await engine.start('chain', { id: message.workflowId });
    if (message.kind === 'network') network.up = message.up;
    if (message.kind === 'report') {
      syncing = false;
      const { conflicts } = await pass();
      process.send({ kind: 'report', device: name, apart: conflicts.map((e) => e.workflowId), histories: await histories(message.ids) });
      return;
    }
    if (message.kind === 'stop') {
      await engine.stop();
      process.exit(0);
    }
    process.send({ kind: 'done', of: message.kind });
  } catch (error) {
    process.send({ kind: 'failed', of: message.kind, code: error?.code ?? null, message: String(error?.message ?? error) });
  }
});
process.send({ kind: 'ready', device: engine.device });
