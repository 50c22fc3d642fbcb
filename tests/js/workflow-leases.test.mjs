// Devices that own their runs (runstore/workflow with `leases`): two devices, each the
// package's own store (runstore/core in Node, on memory) with an engine, sync through the
// runstore-sync binary (scripts/test-sync.sh runs this, on PostgreSQL). A run started on one
// device, whose network then goes (no renewal, no release), stops there once its lease ends by
// that device's clock; the other device takes it over once the lease has expired on the
// server, pulls what the first pushed and finishes it; the first device, back, does not run it
// again, and its pushes under the old lease are fenced.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { syncStore } from '../../js/sync.js';
import { defineWorkflow, WorkflowEngine } from '../../js/workflow.js';
import { openMemoryStore } from './node-store.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const TOKEN = 'token-leases';
const NAMESPACE = 'devices';
const TTL_MS = 600;

let settings;
let server;

before(async () => {
  settings = syncServerSettings(await freePort(), { [TOKEN]: [NAMESPACE] }, `leases_${process.pid}`);
  server = await startSyncServer(settings);
});

after(async () => {
  await server?.stop();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check, what, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A device: its store, a fetch its network can be cut from, and an engine with leases. */
async function device(name, workflows) {
  const network = { up: true };
  const fetch = (...args) => (network.up ? globalThis.fetch(...args) : Promise.reject(new TypeError(`${name} is offline`)));
  const store = await openMemoryStore(name);
  const errors = [];
  const start = () =>
    WorkflowEngine.start(store, {
      workflows,
      leases: { url: settings.url, token: TOKEN, namespace: NAMESPACE, ttlMs: TTL_MS, fetch },
      onError: (error) => { if (process.env.DEBUG_LEASES) console.log('engine error', name, error); errors.push(error?.code ?? String(error)); },
    });
  const sync = (engine) => syncStore(store, { url: settings.url, token: TOKEN, namespace: NAMESPACE, fetch, leases: engine?.leases ?? null });
  return { name, network, store, errors, start, sync };
}

async function serverLease(workflowId) {
  const response = await fetch(`${settings.url}/v1/namespaces/${NAMESPACE}/workflows/${workflowId}/lease`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await response.json()).lease;
}

test('a run whose device went away is taken over once its lease expires and finishes on the other device; the first device stops it by its own clock and never runs it again', async () => {
  const calls = [];
  // The same workflow on each device; its bodies say which device ran them.
  const flowOn = (name) =>
    defineWorkflow('handover', async (ctx) => {
      const one = await ctx.step('one', () => {
        calls.push(['one', name]);
        return name;
      });
      await ctx.sleep('gap', 2_000);
      const two = await ctx.step('two', () => {
        calls.push(['two', name]);
        return name;
      });
      return { one, two };
    });
  const a = await device('a', [flowOn('a')]);
  const b = await device('b', [flowOn('b')]);
  const engineA = await a.start();
  await engineA.start('handover', { id: 'r1' });
  await until(async () => (await engineA.describe('r1')).waiting?.startsWith('sleep'), 'the run to sleep on device a');
  const lease = await serverLease('r1');
  assert.deepEqual([lease?.holder, lease?.epoch, lease?.live], [engineA.device, 1, true], 'device a holds the run');
  assert.deepEqual((await a.sync(engineA)).conflicts, []);

  // Device a's network goes (no renewal, no release) while its engine goes on. Device b pulls
  // the run, then starts its engine (on runstore/core an engine hears of its own commits, not
  // of a sync's): a's lease still holds on the server, so b shows the run and asks again until
  // the lease has expired, then takes it, pulls, and runs the rest when the sleep ends.
  a.network.up = false;
  await b.sync(null);
  const engineB = await b.start();
  assert.equal((await serverLease('r1')).holder, engineA.device, "device b started while a's lease held");
  const result = await until(async () => {
    const d = await engineB.describe('r1').catch(() => null);
    return d?.status === 'completed' && (await engineB.result('r1'));
  }, 'device b to finish the run');
  assert.deepEqual(result, { one: 'a', two: 'b' });
  // Device a's engine ran on through the sleep, cut off: it stopped the run when its lease
  // ended by its own clock, so the second step ran once, on b.
  assert.deepEqual(calls, [['one', 'a'], ['two', 'b']]);
  const afterRun = await until(async () => {
    const l = await serverLease('r1');
    return l?.live === false && l;
  }, 'device b to give the lease up after pushing the end');
  assert.deepEqual([afterRun.holder, afterRun.epoch], [engineB.device, 2]);

  // Device a's network comes back: its engine asks for the run again, pulls its end, and runs
  // nothing again.
  a.network.up = true;
  await until(async () => (await a.store.workflowSummary('r1')).status === 'completed', 'device a to pull the end of the run');
  await sleep(TTL_MS);
  assert.deepEqual(calls, [['one', 'a'], ['two', 'b']], 'device a ran nothing again');
  await engineA.stop();
  await engineB.stop();
  assert.deepEqual([...a.errors, ...b.errors].filter((code) => code !== 'NOT_FOUND' && code !== 'UNAVAILABLE'), []);
});
