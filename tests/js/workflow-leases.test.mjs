// Devices that own their runs (runstore/workflow with `leases`): two devices, each the
// package's own store (runstore/core in Node, on memory) with an engine, sync through the
// runstore-sync binary (scripts/test-sync.sh runs this, on PostgreSQL). A run started on one
// device, whose network then goes (no renewal, no release), stops there once its lease ends by
// that device's clock; the other device takes it over once the lease has expired on the
// server, pulls what the first pushed and finishes it; the first device, back, does not run it
// again. Signals wait for a run's lease; epochs outlive a reload.
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

/**
 * A device: its store, a network that can go down (requests fail at once) or hang (requests
 * are never answered, until their signal aborts them), and an engine with leases.
 */
async function device(name, workflows, ttlMs = TTL_MS) {
  const network = { state: 'up' };
  const fetch = (url, init) => {
    if (network.state === 'up') return globalThis.fetch(url, init);
    if (network.state === 'down') return Promise.reject(new TypeError(`${name} is offline`));
    return new Promise((resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal.reason)));
  };
  const store = await openMemoryStore(name);
  const errors = [];
  const start = () =>
    WorkflowEngine.start(store, {
      workflows,
      leases: { url: settings.url, token: TOKEN, namespace: NAMESPACE, ttlMs, fetch },
      onError: (error) => errors.push(error?.code ?? String(error)),
    });
  const sync = (engine) => syncStore(store, { url: settings.url, token: TOKEN, namespace: NAMESPACE, fetch, leases: engine?.leases ?? null });
  return { name, network, store, errors, start, sync };
}

async function serverLease(workflowId) {
  const response = await fetch(`${settings.url}/v1/namespaces/${NAMESPACE}/workflows/${workflowId}/lease`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await response.json()).lease;
}

/**
 * The same workflow for each device: steps one, two and three with durable sleeps (`gaps`, ms)
 * between them; its bodies record in `calls` which device (`name`) ran them.
 */
function threeSteps(type, name, calls, [gap1, gap2]) {
  return defineWorkflow(type, async (ctx) => {
    const body = (step) => () => {
      calls.push([step, name]);
      return name;
    };
    const one = await ctx.step('one', body('one'));
    await ctx.sleep('gap1', gap1);
    const two = await ctx.step('two', body('two'));
    await ctx.sleep('gap2', gap2);
    const three = await ctx.step('three', body('three'));
    return { one, two, three };
  });
}

/** The errors an engine reported, but for the server out of reach and runs not found. */
const unexpected = (...devices) => devices.flatMap((d) => d.errors).filter((code) => code !== 'NOT_FOUND' && code !== 'UNAVAILABLE');

for (const cut of ['down', 'hanging']) {
  test(`a run whose device went away (network ${cut}) is taken over once its lease expires: the other device pulls what the first pushed, finishes the run, and the first, stopped by its own clock, never runs it again`, async () => {
    const calls = [];
    const flowOn = (name) => threeSteps('handover', name, calls, [1_000, 2_000]);
    const id = `handover-${cut}`;
    const a = await device('a', [flowOn('a')]);
    const b = await device('b', [flowOn('b')]);
    const engineA = await a.start();
    await engineA.start('handover', { id });
    const waitingOn = (name) => until(async () => (await engineA.describe(id)).waiting?.startsWith(`sleep ${name}`) && true, `the run to sleep on ${name} on device a`);
    await waitingOn('gap1');
    const lease = await serverLease(id);
    assert.deepEqual([lease?.holder, lease?.epoch, lease?.live], [engineA.device, 1, true], 'device a holds the run');
    // Device b has the run as far as its first step; device a pushes its second step, then
    // its network goes (no renewal, no release) while its engine goes on.
    assert.deepEqual((await a.sync(engineA)).conflicts, []);
    await b.sync(null);
    await waitingOn('gap2');
    assert.deepEqual((await a.sync(engineA)).conflicts, []);
    a.network.state = cut;
    // Device b starts its engine: a's lease still holds on the server, so b shows the run and
    // asks again until the lease has expired, then takes it (epoch 2) and pulls the second
    // step before it runs the third (without that pull it would run the second step again).
    const engineB = await b.start();
    assert.equal((await serverLease(id)).holder, engineA.device, "device b started while a's lease held");
    const result = await until(async () => {
      const d = await engineB.describe(id).catch(() => null);
      return d?.status === 'completed' && (await engineB.result(id));
    }, 'device b to finish the run');
    assert.deepEqual(result, { one: 'a', two: 'a', three: 'b' });
    // Device a's engine ran on through the sleep, cut off: it stopped the run when its lease
    // ended by its own clock, so the third step ran once, on b.
    assert.deepEqual(calls, [['one', 'a'], ['two', 'a'], ['three', 'b']]);
    const afterRun = await until(async () => {
      const l = await serverLease(id);
      return l?.live === false && l;
    }, 'device b to give the lease up after pushing the end');
    assert.deepEqual([afterRun.holder, afterRun.epoch], [engineB.device, 2]);

    // Device a's network comes back: its engine asks for the run again, takes the lease (epoch
    // 3), pulls the run's end, gives the lease back, and runs nothing again.
    a.network.state = 'up';
    await until(async () => (await a.store.workflowSummary(id)).status === 'completed', 'device a to pull the end of the run');
    const given = await until(async () => {
      const l = await serverLease(id);
      return l?.holder === engineA.device && !l.live && l;
    }, 'device a to give back the lease of the ended run');
    assert.equal(given.epoch, 3);
    await sleep(TTL_MS);
    assert.deepEqual(calls, [['one', 'a'], ['two', 'a'], ['three', 'b']], 'device a ran nothing again');
    await engineA.stop();
    await engineB.stop();
    assert.deepEqual(unexpected(a, b), []);
  });
}

test('a signal sent while a run waits for its lease waits with it, and reaches the run once the lease is taken; one sent while another device is known to hold the lease is refused', async () => {
  const flow = defineWorkflow('approval', async (ctx) => {
    const go = await ctx.waitForSignal('go');
    const early = await ctx.waitForSignal('early');
    return ctx.step('record', () => [early, go]);
  });
  const ttlMs = 3_000;
  const a = await device('a', [flow], ttlMs);
  const b = await device('b', [flow], ttlMs);
  const engineA = await a.start();
  await engineA.start('approval', { id: 'sig-1' });
  await until(async () => (await engineA.describe('sig-1')).waiting?.endsWith(' go'), 'the run to wait for its signal on device a');
  assert.deepEqual((await a.sync(engineA)).conflicts, []);
  await b.sync(null);
  // Device a goes away holding the lease; device b, offline too, cannot ask for it.
  a.network.state = 'down';
  b.network.state = 'down';
  // One signal sent as b's engine starts (held by the run as it loads), one once the run was
  // found waiting for its lease (read from the inbox then): both wait in the inbox.
  const engineB = await b.start();
  await engineB.signal('sig-1', 'early', 'sent at start', { signalId: 'early-1' });
  await sleep(500);
  await engineB.signal('sig-1', 'go', 'approved on b', { signalId: 'go-1' });
  // Device b back: the server says a holds the lease, and a signal sent now is refused.
  b.network.state = 'up';
  const refused = await until(async () => {
    try {
      await engineB.signal('sig-1', 'other', null, { signalId: `probe-${Date.now()}` });
      return false;
    } catch (error) {
      return error;
    }
  }, "device b to hear that a holds the lease");
  assert.equal(refused.code, 'CONFLICT');
  assert.match(refused.message, new RegExp(engineA.device));
  // Once a's lease expires, b takes the run over, and the signal sent while it waited is there.
  const result = await until(async () => (await engineB.describe('sig-1').catch(() => null))?.status === 'completed' && engineB.result('sig-1'), 'device b to finish the run', 30_000);
  assert.deepEqual(result, ['sent at start', 'approved on b']);
  await engineA.stop();
  await engineB.stop();
  assert.deepEqual(unexpected(a, b), []);
});

test("a run's end recorded offline is pushed under its lease after a reload: the epoch is kept in the store", async () => {
  const flow = defineWorkflow('short', async (ctx) => {
    await ctx.step('one', () => 1);
    await ctx.sleep('pause', 300);
    return ctx.step('two', () => 2);
  });
  const a = await device('a', [flow], 3_000);
  const engineA = await a.start();
  await engineA.start('short', { id: 'reload-1' });
  await until(async () => (await engineA.describe('reload-1')).waiting?.startsWith('sleep'), 'the run to sleep');
  assert.deepEqual((await a.sync(engineA)).conflicts, []);
  // The network goes before the run ends: its end cannot be pushed, and the lease is not given up.
  a.network.state = 'down';
  assert.equal(await engineA.result('reload-1'), 2);
  await engineA.stop();
  // The page reloads: a new engine on the same store, which holds no lease in memory. The
  // app's sync pushes the end under the epoch kept in the store (without it: FENCED).
  a.network.state = 'up';
  const reloaded = await a.start();
  const summary = await a.sync(reloaded);
  assert.deepEqual(summary.conflicts, []);
  assert.ok(summary.pushed.events > 0, 'the end was pushed');
  const b = await device('b', []);
  await b.sync(null);
  assert.equal((await b.store.workflowSummary('reload-1')).status, 'completed');
  await reloaded.stop();
  assert.deepEqual(unexpected(a), []);
});

test('a run checked out runs to its end on its device, offline for many of the engine lease durations and across a reload, while the other device only shows it and cannot take it', async () => {
  const calls = [];
  const flowOn = (name) => threeSteps('checkout', name, calls, [1_200, 1_200]);
  const id = 'checkout-1';
  const a = await device('a', [flowOn('a')]);
  const b = await device('b', [flowOn('b')]);
  const engineA = await a.start();
  await engineA.start('checkout', { id });
  await until(async () => (await engineA.describe(id)).waiting?.startsWith('sleep gap1') && true, 'the run to sleep on gap1 on device a');
  const checkedOut = await engineA.checkout(id, { forMs: 10_000 });
  assert.equal(checkedOut.epoch, 1, 'the lease a held, renewed for longer');
  const lease = await serverLease(id);
  assert.ok(lease.expiresAt - Date.now() > 8_000, 'the server holds the lease for the checkout');
  assert.equal((await engineA.describe(id)).checkedOutUntil, checkedOut.until);
  assert.deepEqual((await a.sync(engineA)).conflicts, []);
  await b.sync(null);
  a.network.state = 'down';
  // Device b shows the run and cannot take it, nor check it out.
  const engineB = await b.start();
  await assert.rejects(engineB.checkout(id, { forMs: 5_000 }), (error) => error.code === 'LEASE_HELD' && error.holder === engineA.device);
  assert.equal((await engineB.describe(id)).runsHere, false);
  // Device a reloads while offline: its checkout is kept, and the run goes on there.
  await until(async () => (await engineA.describe(id)).waiting?.startsWith('sleep gap2') && true, 'device a to record step two');
  await engineA.stop();
  const reloaded = await a.start();
  const result = await until(async () => (await a.store.workflowSummary(id)).status === 'completed' && reloaded.result(id), 'device a to finish the run offline');
  assert.deepEqual(result, { one: 'a', two: 'a', three: 'a' });
  // Back online, device a pushes the end and gives the lease up; device b takes it, pulls the
  // end and runs nothing.
  a.network.state = 'up';
  await until(async () => (await b.store.workflowSummary(id)).status === 'completed', 'device b to pull the end of the run');
  assert.deepEqual(calls, [['one', 'a'], ['two', 'a'], ['three', 'a']]);
  await reloaded.stop();
  await engineB.stop();
  assert.deepEqual(unexpected(a, b), []);
});

test('a checkout needs an engine with leases and a duration from its ttlMs to 20 days', async () => {
  const a = await device('a', []);
  const engine = await a.start();
  await assert.rejects(engine.checkout('c-1', { forMs: TTL_MS - 1 }), (error) => error.code === 'INVALID_INPUT' && error.field === 'options.forMs');
  await assert.rejects(engine.checkout('c-1', { forMs: 21 * 24 * 3_600_000 }), (error) => error.code === 'INVALID_INPUT' && error.field === 'options.forMs');
  await assert.rejects(engine.checkout('c-1', {}), (error) => error.field === 'options.forMs');
  assert.equal(await serverLease('c-1'), null, 'nothing was taken');
  await engine.stop();
  const plain = await WorkflowEngine.start(a.store, { workflows: [] });
  await assert.rejects(plain.checkout('c-1', { forMs: 5_000 }), (error) => error.code === 'INVALID_INPUT' && error.field === 'options.leases');
  await plain.stop();
});

test("passes on one store at once (an app's live sync beside an engine's) run one after another: none fails with CONFLICT", async () => {
  const a = await device('a', []);
  for (let n = 0; n < 20; n++) await a.store.append(`together-${n}`, [{ type: 'custom', name: 'local', recordedAt: n, data: { n } }], 0);
  const summaries = await Promise.all([a.sync(null), a.sync(null), a.sync(null)]);
  assert.equal(summaries.reduce((sum, s) => sum + s.pushed.workflows, 0), 20, 'each workflow pushed once');
  assert.deepEqual(summaries.flatMap((s) => s.conflicts), []);
  const b = await device('b', []);
  await b.sync(null);
  for (let n = 0; n < 20; n++) assert.equal(await b.store.head(`together-${n}`), 1);
});

test('a pass waiting behind one that hangs ends when its signal aborts', async () => {
  const a = await device('a', []);
  await a.store.append('behind-1', [{ type: 'custom', name: 'local', recordedAt: 1, data: {} }], 0);
  // A pass whose fetch never answers and heeds no signal: the pass after it waits.
  const hung = syncStore(a.store, { url: settings.url, token: TOKEN, namespace: NAMESPACE, fetch: () => new Promise(() => {}) });
  const started = performance.now();
  await assert.rejects(
    syncStore(a.store, { url: settings.url, token: TOKEN, namespace: NAMESPACE, signal: AbortSignal.timeout(300) }),
    (error) => error.name === 'TimeoutError',
  );
  assert.ok(performance.now() - started < 5_000, 'the waiting pass ended with its signal');
  void hung;
});
