// Devices that own their runs, checked on the whole history at the end. Three devices, each a
// process of its own (tests/js/lease-device.mjs: the package's store in Node, its workflow
// engine with leases, the app's sync passes under them; wall clocks seconds apart), run the
// same `chain` workflows (steps with a durable sleep between them) through a loopback proxy to
// two runstore-sync processes on one database, while the checker cuts and delays connections,
// kills a server process and starts it again, cuts a device off the network, and pauses a
// device (SIGSTOP) for longer than its leases, then wakes it. Every step body tells the checker
// its device, the epoch of the lease it ran under and the true time it started. Then, the
// faults gone, every run is finished, and the checker reads the server's history and each
// device's copy:
// - no effect by a fenced-out owner: each body started before its lease (its device, its
//   epoch) ended by the server's clock, as the server's answers to that device said;
// - no run advanced by two owners: no push was admitted under an epoch older than one the
//   server had granted before the push was sent, and the step results the server holds never
//   go back to an older owner;
// - nothing lost: every run completed on the server with each step's result once, in order;
//   each device holds each run as the server has it, or its last pass reported it apart.
// LEASE_CHECK_SEED makes other runs; with LEASE_CHECK_UNFENCED=1 (tests/js/sync-controls.test.mjs)
// the devices reach the servers through a relay that makes every push carry the lease the
// server holds, as a server that did not check epochs would admit them: the checker must fail.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FaultProxy } from './fault-proxy.mjs';
import { random, startSyncServer, startSyncServers } from './sync-server.mjs';

const TOKEN = 'token-leases-check';
const NAMESPACE = 'leases-check';
const DEVICES = 3;
const RUNS_PER_DEVICE = 2;
const STEPS = 12;
const TTL_MS = 900;
/** The durable sleep between two steps: a run lasts through most of the faults. */
const STEP_GAP_MS = 700;
/** How often a device's app syncs: seldom enough that a paused device often holds steps it has not pushed. */
const SYNC_EVERY_MS = 1_200;
/**
 * Each device's wall clock: true, 12 s ahead, 8 s behind. (A durable timer is a wall-clock
 * instant: a device whose clock is behind the one that set it fires it late by the difference.)
 */
const SKEWS = [0, 12_000, -8_000];
const CHAOS_MS = Number(process.env.LEASE_CHECK_CHAOS_MS ?? 14_000);
const SEED = Number(process.env.LEASE_CHECK_SEED ?? 7);
const DEVICE = fileURLToPath(new URL('./lease-device.mjs', import.meta.url));

const servers = [];
let proxy;
let url;
let relay = null;
const devices = [];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

before(async () => {
  servers.push(...(await startSyncServers({ [TOKEN]: [NAMESPACE] }, `leases_check_${process.pid}`)));
  proxy = new FaultProxy(() => servers.filter((s) => s.running).map((s) => s.settings.port));
  url = `http://127.0.0.1:${await proxy.listen()}`;
  if (process.env.LEASE_CHECK_UNFENCED === '1') {
    const { UnfencedRelay } = await import('./unfenced-relay.mjs');
    relay = new UnfencedRelay(url, { leases: true });
    url = await relay.listen();
  }
});

after(async () => {
  for (const device of devices) device.child.kill('SIGKILL');
  await relay?.close();
  await proxy?.close();
  for (const server of servers) await server.running?.stop();
});

/** Starts device `i`; resolves once its engine runs. What it tells goes to `log`. */
async function startDevice(i, log) {
  const options = { name: `d${i}`, url, token: TOKEN, namespace: NAMESPACE, ttlMs: TTL_MS, skewMs: SKEWS[i], steps: STEPS, stepGapMs: STEP_GAP_MS, syncEveryMs: SYNC_EVERY_MS };
  const child = fork(DEVICE, [JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const device = { name: options.name, child, paused: false, waiters: [] };
  child.on('message', (message) => {
    if (message.kind === 'grant') log.grants.push(message);
    else if (message.kind === 'effect') log.effects.push(message);
    else if (message.kind === 'push') log.pushes.push(message);
    else if (message.kind === 'conflict') log.conflicts.push(message);
    else if (message.kind === 'error') log.errors.push(message);
    else device.waiters.shift()?.(message);
  });
  const ready = await ask(device, null);
  device.id = ready.device;
  devices.push(device);
  return device;
}

/** Sends `message` to the device (none: waits for its first word); resolves to its answer. */
function ask(device, message) {
  return new Promise((resolve, reject) => {
    device.waiters.push((answer) => (answer.kind === 'failed' ? reject(new Error(`${device.name}: ${answer.of} failed: ${answer.code} ${answer.message}`)) : resolve(answer)));
    if (message) device.child.send(message);
  });
}

async function serverEvents(workflowId) {
  const response = await fetch(`${servers[0].settings.url}/v1/namespaces/${NAMESPACE}/workflows/${encodeURIComponent(workflowId)}/events?limit=1000`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  if (response.status === 404) return [];
  const body = await response.json();
  assert.ok(response.ok && body.complete, `the server's events of ${workflowId}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
  return body.events.map((e) => [e.seq, e.type, e.name ?? null, e.data?.result ?? null]);
}

/** The step results of a history, in order: `{ device, step, epoch }`. */
const resultsOf = (history) => history.filter(([, type, name]) => type === 'custom' && name === 'stepDone').map(([, , , result]) => result);

test(`devices run the same workflows under leases through cut connections, killed servers, cut-off and paused devices and skewed clocks: no effect by a fenced-out owner, no run advanced by two owners, nothing lost (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const r = random(SEED);
  const log = { grants: [], effects: [], pushes: [], conflicts: [], errors: [] };
  for (let i = 0; i < DEVICES; i += 1) await startDevice(i, log);
  const ids = [];
  for (const [i, device] of devices.entries()) {
    for (let n = 0; n < RUNS_PER_DEVICE; n += 1) {
      ids.push(`chain-${i}-${n}`);
      await ask(device, { kind: 'start', workflowId: `chain-${i}-${n}` });
    }
  }

  const counts = { kills: 0, cutOff: 0, pauses: 0 };
  const until = Date.now() + CHAOS_MS;
  while (Date.now() < until) {
    proxy.setFaults({ cutRequest: r() < 0.5 ? 0.04 : 0, cutAnswer: r() < 0.5 ? 0.06 : 0, delayMs: r() < 0.5 ? 20 : 0 });
    for (const server of servers) if (!server.running) server.running = await startSyncServer(server.settings);
    if (servers.length > 1 && r() < 0.25) {
      const victim = servers[Math.floor(r() * servers.length)];
      await victim.running.stop();
      victim.running = null;
      counts.kills += 1;
      proxy.dropAll();
    }
    const device = devices[Math.floor(r() * devices.length)];
    const fault = r();
    if (fault < 0.35) {
      // Asleep past its leases: its timers come late when it wakes, and another device may
      // have taken its runs meanwhile.
      counts.pauses += 1;
      device.child.kill('SIGSTOP');
      await sleep(TTL_MS * (1.3 + r()));
      device.child.kill('SIGCONT');
    } else if (fault < 0.6) {
      counts.cutOff += 1;
      await ask(device, { kind: 'network', up: false });
      await sleep(TTL_MS * (0.5 + 1.5 * r()));
      await ask(device, { kind: 'network', up: true });
    } else {
      await sleep(300 + 500 * r());
    }
  }

  // Faults gone, every server up: the runs finish, and every device catches up.
  proxy.setFaults({});
  for (const server of servers) if (!server.running) server.running = await startSyncServer(server.settings);
  const server = {};
  const settleBy = Date.now() + 90_000;
  for (const id of ids) {
    for (;;) {
      server[id] = await serverEvents(id);
      if (server[id].some(([, type]) => type === 'completed') || Date.now() > settleBy) break;
      await sleep(200);
    }
  }
  await sleep(TTL_MS * 2); // every device's passes pull the ends

  if (process.env.LEASE_CHECK_LOG) (await import('node:fs')).writeFileSync(process.env.LEASE_CHECK_LOG, JSON.stringify({ log, server, devices: devices.map((d) => [d.name, d.id]) }));
  // No effect by a fenced-out owner: none after its lease ended by the server's answers to its
  // device, nor after the server granted the run to a later epoch (a lease given up ends early).
  const firstGrant = new Map(); // run/epoch → when the server first granted it (its clock)
  for (const grant of log.grants) {
    const key = `${grant.workflowId}/${grant.epoch}`;
    firstGrant.set(key, Math.min(firstGrant.get(key) ?? Infinity, grant.expiresAt - TTL_MS));
  }
  const expiries = new Map(); // device/run/epoch → the latest expiry the server gave that device
  for (const grant of log.grants) {
    const key = `${grant.holder}/${grant.workflowId}/${grant.epoch}`;
    expiries.set(key, Math.max(expiries.get(key) ?? 0, grant.expiresAt));
  }
  const holderOf = new Map(devices.map((d) => [d.name, d.id]));
  for (const effect of log.effects) {
    const expiry = expiries.get(`${holderOf.get(effect.device)}/${effect.workflowId}/${effect.epoch}`);
    assert.ok(expiry !== undefined, `${effect.device} ran step ${effect.step} of ${effect.workflowId} under epoch ${effect.epoch}, which the server never gave it`);
    assert.ok(effect.at < expiry, `${effect.device} ran step ${effect.step} of ${effect.workflowId} ${effect.at - expiry} ms after its lease (epoch ${effect.epoch}) ended on the server`);
    for (const [key, grantedAt] of firstGrant) {
      const cut = key.lastIndexOf('/');
      if (key.slice(0, cut) !== effect.workflowId || Number(key.slice(cut + 1)) <= effect.epoch) continue;
      assert.ok(effect.at < grantedAt, `${effect.device} ran step ${effect.step} of ${effect.workflowId} under epoch ${effect.epoch} ${effect.at - grantedAt} ms after the server granted epoch ${key.slice(cut + 1)}`);
    }
  }

  // No run advanced by two owners (checked first: a second owner can leave a run that no
  // device can finish).
  for (const push of log.pushes) {
    for (const [key, grantedAt] of firstGrant) {
      const cut = key.lastIndexOf('/');
      const [workflowId, epoch] = [key.slice(0, cut), Number(key.slice(cut + 1))];
      assert.ok(workflowId !== push.workflowId || epoch <= push.epoch || grantedAt >= push.sentAt,
        `${push.workflowId}: the server admitted ${push.device}'s push under epoch ${push.epoch}, sent ${push.sentAt - grantedAt} ms after it granted epoch ${epoch}: two owners advanced the run`);
    }
  }
  for (const id of ids) {
    const epochs = resultsOf(server[id]).map((result) => result.epoch);
    assert.deepEqual(epochs, [...epochs].sort((a, b) => a - b), `${id}: the server's step results go back to an older owner`);
  }

  // Nothing lost: every run completed, each step's result once and in order; each device holds
  // it as the server does, or its last pass said it is apart.
  const reports = [];
  for (const device of devices) reports.push(await ask(device, { kind: 'report', ids }));
  for (const id of ids) {
    assert.ok(server[id].some(([, type]) => type === 'completed'), `run ${id} did not complete on the server: ${JSON.stringify(server[id].slice(-3))}`);
    const results = resultsOf(server[id]);
    assert.deepEqual(results.map((result) => result.step), Array.from({ length: STEPS }, (_, k) => k + 1), `the server's history of ${id} lost, reordered or repeated steps`);
    for (const report of reports) {
      if (report.apart.includes(id)) continue;
      assert.deepEqual(report.histories[id], server[id], `${report.device}'s copy of ${id} differs from the server's and its last pass did not report it apart`);
    }
  }

  const ranTwice = log.effects.length - ids.length * STEPS;
  console.log(`# seed ${SEED}: ${ids.length} runs of ${STEPS} steps, ${log.effects.length} bodies run (${ranTwice} again after a hand-over or a stop), ` +
    `${new Set(log.grants.map((g) => `${g.workflowId}/${g.epoch}`)).size} leases granted, ${counts.pauses} pauses, ${counts.cutOff} cut-offs, ${counts.kills} server kills, ` +
    `${log.conflicts.length} pushes reported apart (${[...new Set(log.conflicts.map((c) => c.code))].join(', ') || 'none'}), ` +
    `${reports.reduce((n, report) => n + report.apart.length, 0)} copies left apart; proxy ${JSON.stringify(proxy.counts)}`);
  for (const device of devices) {
    const exited = new Promise((resolve) => device.child.once('exit', resolve));
    device.child.send({ kind: 'stop' });
    await exited;
  }
});
