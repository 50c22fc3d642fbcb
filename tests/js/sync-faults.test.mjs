// Sync under faults, checked on the whole history at the end. Three clients (two the package's
// store in Node, on memory; one the package as an app bundles it, in a Chromium page of its own
// profile, on OPFS) append and sync in rounds through a loopback proxy to two
// runstore-sync processes on one database, while the test cuts connections before a request
// reaches a server and after a server answered (the answer lost once the request applied),
// delays bytes, kills a server process and starts it again, and rolls one client back by
// importing an export it made earlier. Each client writes workflows of its own and one that
// all share. Then, with the faults gone, every client syncs until a pass ends without error,
// and the checker reads every history, on the server and in each client:
// - a workflow only one client wrote, and that client never rolled back, is on the server
//   exactly as in the client: every event it appended, once, in order;
// - no event is on the server twice (every event is unique by its client and number);
// - wherever a client's history and the server's differ, the client's last pass reported that
//   workflow as a SEQUENCE_CONFLICT: no divergence is silent;
// - every client holds every other client's workflows as the server has them (converged).
// Clients also write short workflows that close at once, and two of them now and then purge
// every closed workflow they hold; of those:
// - the server holds each as its writer wrote it, or not at all (purged before it was pushed);
// - a client that purged one never gets it back from the server; every other holds it as the
//   server does.
// Beside the stores, through the same proxy, a producer pushes outbox rows with its events and
// a worker claims them and completes or retries each under its claim token, and now and then
// completes a row under a token that a later claim replaced. A call whose answer did not come
// is sent again later with the same request id and body, as a worker that restarts would. The
// checker then asserts on the outbox:
// - no row was completed under a stale token: each row's completion carried the last token any
//   claim handed out for it, and every completion under a replaced token was refused;
// - every row pushed was completed exactly once, and none is left to claim.
// scripts/test-sync.sh runs this; SYNC_FAULT_ROUNDS and SYNC_FAULT_SEED make other runs, and
// scripts/check-sync.sh runs it over many seeds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { FaultProxy } from './fault-proxy.mjs';
import { openMemoryStore } from './node-store.mjs';
import { NodeClient, PageClient } from './sync-clients.mjs';
import { random, startSyncServer, startSyncServers } from './sync-server.mjs';

// The client under test: the package's own, or (SYNC_CHECK_CLIENT, a file URL) a changed copy
// that tests/js/sync-controls.test.mjs runs to show that the checker fails on a known defect.
const { syncStore } = await import(process.env.SYNC_CHECK_CLIENT ?? '../../js/sync.js');

const TOKEN = 'token-faults';
const NAMESPACE = 'faults';
const CLIENTS = 3;
const OWN_WORKFLOWS = 4;
const ROUNDS = Number(process.env.SYNC_FAULT_ROUNDS ?? 16);
/** The client rolled back: it exports at ROLLBACK_FROM and imports that export at ROLLBACK_AT. */
const ROLLED_BACK = 1;
const ROLLBACK_FROM = 3;
const ROLLBACK_AT = Math.min(8, ROUNDS - 2);
/** The client that is a browser profile: the package in a Chromium page, on OPFS (SYNC_CHECK_BROWSER=0: none). */
const IN_BROWSER = process.env.SYNC_CHECK_BROWSER === '0' ? -1 : 2;
const TEST_APP = fileURLToPath(new URL('../app/dist', import.meta.url));
/** Codes a pass may end with while faults last. */
const FAULT_CODES = new Set(['UNAVAILABLE']);

const servers = [];
/** Every checker client opened, closed by `after` whatever the test did (a browser keeps the process alive). */
const open = [];
let proxy;
let url;
/** SYNC_CHECK_UNFENCED=1 (a negative control only): the outbox calls go through a relay that ignores claim tokens. */
let relay = null;

const SEED = Number(process.env.SYNC_FAULT_SEED ?? 1234);

before(async () => {
  servers.push(...(await startSyncServers({ [TOKEN]: [NAMESPACE] }, `sync_faults_${process.pid}`)));
  proxy = new FaultProxy(() => servers.filter((s) => s.running).map((s) => s.settings.port));
  url = `http://127.0.0.1:${await proxy.listen()}`;
  if (process.env.SYNC_CHECK_UNFENCED === '1') {
    const { UnfencedRelay } = await import('./unfenced-relay.mjs');
    relay = new UnfencedRelay(url);
  }
});

after(async () => {
  for (const client of open) await client.close().catch(() => {});
  await relay?.close();
  await proxy?.close();
  for (const server of servers) await server.running?.stop();
});

/**
 * The outbox's producer and worker, calling the server through the proxy. A call that gets no
 * answer (the connection cut or refused, the server gone) stays pending and is sent again,
 * with the same request id and body, at the next `round` or `drain`.
 */
class OutboxWorker {
  head = 0;
  pushed = new Set();
  /** dispatch key → every claim token handed out for it, in order. */
  issued = new Map();
  /** dispatch key → { token, attempt } of the claim this worker holds. */
  held = new Map();
  /** dispatch key → the request ids of the completions answered 200. */
  completedBy = new Map();
  /** dispatch key → the token of each completion answered 200. */
  completedWith = new Map();
  /** Completions sent under a token a later claim replaced: [key, token, status, code]. */
  stale = [];
  pending = [];
  calls = 0;
  lastClaimed = null;
  #ids = 0;

  constructor(url, r) {
    this.url = url;
    this.r = r;
  }

  async #send(op) {
    this.calls += 1;
    try {
      const response = await fetch(`${this.url}/v1/namespaces/${NAMESPACE}/${op.path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(op.body),
      });
      const text = await response.text();
      if (response.status >= 500) return null;
      return { status: response.status, body: JSON.parse(text) };
    } catch {
      return null;
    }
  }

  /** Sends `op` now; unanswered, it is kept for later. */
  async #call(op) {
    const answer = await this.#send(op);
    if (answer === null) {
      this.pending.push(op);
      return;
    }
    this.#answered(op, answer);
  }

  #answered(op, { status, body }) {
    const { kind, key, token } = op;
    if (kind === 'push') {
      assert.equal(status, 200, `outbox push: ${JSON.stringify(body)}`);
      this.head = body.head;
      for (const row of op.body.outbox) this.pushed.add(row.dispatchKey);
    } else if (kind === 'claim') {
      assert.equal(status, 200, `claim: ${JSON.stringify(body)}`);
      this.lastClaimed = body.rows.length;
      for (const row of body.rows) {
        const tokens = this.issued.get(row.dispatchKey) ?? [];
        if (!tokens.includes(row.claimToken)) tokens.push(row.claimToken);
        this.issued.set(row.dispatchKey, tokens);
        this.held.set(row.dispatchKey, { token: row.claimToken, attempt: row.attempt });
      }
    } else if (kind === 'complete' || kind === 'stale') {
      if (kind === 'stale') this.stale.push([key, token, status, body.code]);
      if (status === 200) {
        const ids = this.completedBy.get(key) ?? new Set();
        ids.add(op.body.requestId);
        this.completedBy.set(key, ids);
        this.completedWith.set(key, token);
      }
      if (this.held.get(key)?.token === token) this.held.delete(key);
    } else if (kind === 'retry') {
      assert.ok(status === 200 || status === 409, `retry: ${status} ${JSON.stringify(body)}`);
      if (this.held.get(key)?.token === token) this.held.delete(key);
    }
  }

  #id(kind) {
    this.#ids += 1;
    return `outbox-${kind}-${this.#ids}`;
  }

  /** Retries what is pending, pushes 3 rows, claims, then completes or retries what it holds. */
  async round(round) {
    const retrying = this.pending;
    this.pending = [];
    for (const op of retrying) await this.#call(op);
    if (!retrying.some((op) => op.kind === 'push') && !this.pending.some((op) => op.kind === 'push')) {
      const outbox = [0, 1, 2].map((i) => ({
        dispatchKey: `o${round}-${i}`, workflowId: 'outbox-producer', ordinal: this.head + i, activityType: 'send', input: [round, i], visibleAfter: 0,
      }));
      const events = [{ type: 'custom', name: `outbox-${round}`, recordedAt: round, data: { round } }];
      await this.#call({ kind: 'push', path: 'push', body: { requestId: this.#id('push'), workflowId: 'outbox-producer', expectedHead: this.head, events, outbox } });
    }
    await this.#call({ kind: 'claim', path: 'outbox/claim', body: { limit: 4, requestId: this.#id('claim') } });
    await this.#settle(0.3);
  }

  async #settle(retryChance) {
    // A late worker first: completes a row claimed again under a token that claim replaced,
    // while the row is live under the newer claim (which settles it just after).
    for (const key of this.held.keys()) {
      const tokens = this.issued.get(key);
      if (tokens.length > 1 && this.r() < 0.5) {
        const token = tokens[Math.floor(this.r() * (tokens.length - 1))];
        await this.#call({ kind: 'stale', key, token, path: 'outbox/complete', body: { dispatchKey: key, claimToken: token, requestId: this.#id('stale') } });
      }
    }
    for (const [key, { token, attempt }] of [...this.held]) {
      if (this.pending.some((op) => op.key === key && op.token === token)) continue;
      if (this.r() < retryChance) {
        await this.#call({ kind: 'retry', key, token, path: 'outbox/retry', body: { dispatchKey: key, claimToken: token, nextAttempt: attempt + 1, visibleAfter: 0, requestId: this.#id('retry') } });
      } else {
        await this.#call({ kind: 'complete', key, token, path: 'outbox/complete', body: { dispatchKey: key, claimToken: token, requestId: this.#id('complete') } });
      }
    }
  }

  /** With the faults gone: everything pending answered, every row claimed and settled. */
  async drain() {
    for (let pass = 0; pass < 100; pass += 1) {
      const retrying = this.pending;
      this.pending = [];
      for (const op of retrying) await this.#call(op);
      assert.deepEqual(this.pending, [], 'a call went unanswered with the faults gone');
      this.lastClaimed = null;
      await this.#call({ kind: 'claim', path: 'outbox/claim', body: { limit: 50, requestId: this.#id('claim') } });
      if (this.lastClaimed === 0 && this.held.size === 0) return;
      await this.#settle(0);
    }
    assert.fail('the outbox did not drain');
  }
}

const own = (client, n) => `c${client}-w${n}`;
const SHARED = 'shared';

async function serverEvents(workflowId) {
  const response = await fetch(`${servers[0].settings.url}/v1/namespaces/${NAMESPACE}/workflows/${workflowId}/events?limit=1000`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  if (response.status === 404) return [];
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const body = JSON.parse(text);
  assert.equal(body.complete, true);
  return body.events;
}

function localEvents(store, workflowId) {
  return store.readHistory(workflowId, { limit: 1000 }).items.map((stored) => stored.event ?? stored);
}

const label = (event) => `${event.data?.client}:${event.data?.n}`;

/** A fetch that sends each push to the server and then loses its answer. */
const losingPushAnswers = async (url, init) => {
  const response = await fetch(url, init);
  if (String(url).endsWith('/push')) {
    await response.text();
    throw new TypeError('connection reset after the server answered');
  }
  return response;
};
/** A fetch that never reaches the server with a push. */
const refusingPushes = async (url, init) => {
  if (String(url).endsWith('/push')) throw new TypeError('connection refused');
  return fetch(url, init);
};
const closedRun = (runId, at) => [
  { type: 'started', workflowType: 'chore', runId, recordedAt: at, data: { runId } },
  { type: 'completed', recordedAt: at + 1, data: { runId } },
];

test('a workflow purged after a push whose answer was lost is not pulled back, and its id written again is a conflict', async () => {
  const store = await openMemoryStore('lost-answer');
  const options = { url: servers[0].settings.url, token: TOKEN, namespace: NAMESPACE };
  store.append('lost-1', closedRun('r1', 1), 0);
  await assert.rejects(syncStore(store, { ...options, fetch: losingPushAnswers }), { code: 'UNAVAILABLE' });
  assert.equal((await serverEvents('lost-1')).length, 2, 'the push did not apply on the server');
  assert.equal(store.purgeWorkflows(2 ** 40, 1000).workflows, 1);
  const afterPurge = await syncStore(store, options);
  assert.deepEqual(afterPurge.pulled, { workflows: 0, events: 0 });
  assert.deepEqual(localEvents(store, 'lost-1'), [], 'the purged workflow came back with the pull');
  store.append('lost-1', closedRun('r2', 10), 0);
  const reused = await syncStore(store, options);
  assert.deepEqual(reused.conflicts.map((c) => [c.code, c.workflowId, c.purged, c.serverHead]), [['SEQUENCE_CONFLICT', 'lost-1', true, 2]]);
  assert.deepEqual(reused.pushed, { workflows: 0, events: 0 });
  assert.deepEqual((await serverEvents('lost-1')).map((e) => e.data.runId), ['r1', 'r1']);
  store.close();
});

test('a workflow purged before any push reached the server is pushed when its id is written again', async () => {
  const store = await openMemoryStore('never-pushed');
  const options = { url: servers[0].settings.url, token: TOKEN, namespace: NAMESPACE };
  store.append('never-1', closedRun('r1', 1), 0);
  await assert.rejects(syncStore(store, { ...options, fetch: refusingPushes }), { code: 'UNAVAILABLE' });
  assert.equal(store.purgeWorkflows(2 ** 40, 1000).workflows, 1);
  store.append('never-1', closedRun('r2', 10), 0);
  const summary = await syncStore(store, options);
  assert.deepEqual(summary.conflicts, []);
  assert.deepEqual(summary.pushed, { workflows: 1, events: 2 });
  assert.deepEqual((await serverEvents('never-1')).map((e) => e.data.runId), ['r2', 'r2']);
  store.close();
});

test(`sync through cut, delayed and refused connections and killed servers: nothing lost, nothing twice, no silent divergence (seed ${SEED})`, { timeout: 600_000 }, async () => {
  const r = random(SEED);
  const stores = [];
  for (let c = 0; c < CLIENTS; c += 1) {
    stores.push(c === IN_BROWSER ? await PageClient.open(`faults-${c}`, TEST_APP) : await NodeClient.open(`faults-${c}`, syncStore));
    open.push(stores[c]);
  }
  const options = { url, token: TOKEN, namespace: NAMESPACE };
  const counters = Array(CLIENTS).fill(0);
  const passes = { ok: 0, failed: 0, conflicts: 0 };
  const failedCodes = new Set();
  let exported = null;
  let kills = 0;
  const worker = new OutboxWorker(relay ? await relay.listen() : url, r);
  /** Closed workflows: id → its writer and the labels of its events; per client, the ids it purged. */
  const done = new Map();
  const purged = stores.map(() => new Set());
  const PURGING = [0, 2].filter((c) => c !== ROLLED_BACK && c < CLIENTS);

  const append = async (c, workflowId) => {
    const n = ++counters[c];
    const head = await stores[c].head(workflowId);
    await stores[c].append(workflowId, [{ type: 'custom', name: `c${c}-${n}`, recordedAt: n, data: { client: c, n } }], head);
  };

  for (let round = 0; round < ROUNDS; round += 1) {
    proxy.setFaults({
      cutRequest: r() < 0.5 ? 0.05 : 0,
      cutAnswer: r() < 0.5 ? 0.08 : 0,
      delayMs: r() < 0.5 ? 30 : 0,
      refuse: r() < 0.1,
    });
    // A server process dies (SIGKILL, as a crash) and the other serves; a dead one comes back.
    for (const server of servers) {
      if (!server.running) server.running = await startSyncServer(server.settings);
    }
    if (servers.length > 1 && r() < 0.3) {
      const victim = servers[Math.floor(r() * servers.length)];
      await victim.running.stop();
      victim.running = null;
      kills += 1;
      proxy.dropAll();
    }
    if (round === ROLLBACK_FROM) exported = await stores[ROLLED_BACK].exportDatabase();
    if (round === ROLLBACK_AT) await stores[ROLLED_BACK].importDatabase(exported);
    for (let c = 0; c < CLIENTS; c += 1) {
      for (let k = 0; k < 2; k += 1) await append(c, own(c, Math.floor(r() * OWN_WORKFLOWS)));
      if (r() < 0.3) await append(c, SHARED);
      if (r() < 0.4) {
        const workflowId = `c${c}-done${done.size}`;
        const n = ++counters[c];
        done.set(workflowId, { writer: c, labels: [`${c}:${n}`, `${c}:${n}-end`] });
        await stores[c].append(workflowId, [
          { type: 'started', workflowType: 'chore', runId: `run-${n}`, recordedAt: n, data: { client: c, n } },
          { type: 'completed', recordedAt: n + 1, data: { client: c, n: `${n}-end` } },
        ], 0);
      }
      // At any time, also while a push's answer was lost: the purge leaves a tombstone for what
      // may be on the server.
      if (PURGING.includes(c) && r() < 0.2) {
        for (const workflowId of done.keys()) if (await stores[c].head(workflowId) > 0) purged[c].add(workflowId);
        await stores[c].purge();
        for (const workflowId of purged[c]) assert.equal(await stores[c].head(workflowId), 0, `client ${c} purged ${workflowId}, yet holds it`);
      }
    }
    await Promise.all([...stores.map(async (store, c) => {
      try {
        const summary = await store.sync(options);
        passes.ok += 1;
        passes.conflicts += summary.conflicts.length;
      } catch (error) {
        passes.failed += 1;
        failedCodes.add(error.code);
        assert.ok(FAULT_CODES.has(error.code), `a pass failed with ${error.code}: ${error.message}`);
      }
    }), worker.round(round)]);
  }

  // Faults gone, every server up: each client syncs until a pass ends without error, twice
  // over, so that each pulls what the others pushed last.
  proxy.setFaults({});
  for (const server of servers) {
    if (!server.running) server.running = await startSyncServer(server.settings);
  }
  await worker.drain();
  const last = [];
  for (let sweep = 0; sweep < 2; sweep += 1) {
    for (let c = 0; c < CLIENTS; c += 1) last[c] = await stores[c].sync(options);
  }
  console.log(`# seed ${SEED}: ${ROUNDS} rounds, clients ${stores.map((s) => s.kind).join('/')}, passes ${passes.ok} ok / ${passes.failed} failed (${[...failedCodes].join(', ') || 'none'}), ` +
    `${passes.conflicts} conflicts reported, ${kills} server kills; ${done.size} closed workflows, ${purged[0].size + purged[2].size} purged from a client; outbox: ${worker.pushed.size} rows, ` +
    `${[...worker.issued.values()].reduce((n, t) => n + t.length, 0)} claims of a row, ${worker.stale.length} stale completions, ${worker.calls} calls; ` +
    `proxy ${JSON.stringify(proxy.counts)}`);

  // The outbox: every row completed exactly once, under the last token handed out for it;
  // every completion under a replaced token refused.
  assert.ok(worker.pushed.size >= 3, 'no outbox row was pushed');
  for (const [key, token, status, code] of worker.stale) {
    assert.notEqual(status, 200, `${key} was completed under the replaced token ${token}`);
    assert.equal(code, 'CONFLICT', `${key} under the replaced token ${token}: ${status} ${code}`);
  }
  assert.deepEqual([...worker.completedWith.keys()].sort(), [...worker.pushed].sort(), 'rows pushed and rows completed differ');
  for (const [key, ids] of worker.completedBy) assert.equal(ids.size, 1, `${key} was completed by ${ids.size} calls`);
  for (const [key, token] of worker.completedWith) {
    const tokens = worker.issued.get(key);
    assert.deepEqual(tokens, [...tokens].sort((a, b) => a - b), `${key}'s claim tokens went backwards: ${tokens}`);
    assert.equal(token, tokens.at(-1), `${key} was completed under token ${token}, yet a later claim handed out ${tokens.at(-1)}`);
  }
  assert.ok(worker.stale.length > 0, 'no completion under a replaced token was tried');

  const workflows = [SHARED];
  for (let c = 0; c < CLIENTS; c += 1) for (let n = 0; n < OWN_WORKFLOWS; n += 1) workflows.push(own(c, n));
  const onServer = new Map();
  for (const workflowId of workflows) {
    const events = await serverEvents(workflowId);
    onServer.set(workflowId, events);
    const labels = events.map(label);
    assert.equal(new Set(labels).size, labels.length, `${workflowId} holds an event twice on the server: ${labels}`);
  }
  for (let c = 0; c < CLIENTS; c += 1) {
    const reported = new Set(last[c].conflicts.map((conflict) => {
      assert.equal(conflict.code, 'SEQUENCE_CONFLICT');
      return conflict.workflowId;
    }));
    for (const workflowId of workflows) {
      const local = (await stores[c].events(workflowId)).map(label);
      const server = onServer.get(workflowId).map(label);
      const writer = workflowId === SHARED ? null : Number(workflowId.slice(1, workflowId.indexOf('-')));
      if (writer === c && c !== ROLLED_BACK) {
        assert.deepEqual(server, local, `client ${c}'s own ${workflowId}: the server lost, reordered or added events`);
      }
      if (JSON.stringify(local) !== JSON.stringify(server)) {
        assert.ok(reported.has(workflowId), `client ${c}'s ${workflowId} differs from the server's and was not reported: ${local} / ${server}`);
      }
      if (writer !== null && writer !== c && writer !== ROLLED_BACK) {
        assert.deepEqual(local, server, `client ${c} did not converge on ${workflowId}`);
      }
    }
  }
  // Closed workflows and purges.
  for (const [workflowId, { writer, labels }] of done) {
    const server = (await serverEvents(workflowId)).map(label);
    if (server.length > 0) assert.deepEqual(server, labels, `${workflowId} on the server is not as client ${writer} wrote it`);
    for (let c = 0; c < CLIENTS; c += 1) {
      const local = (await stores[c].events(workflowId)).map(label);
      if (purged[c].has(workflowId)) {
        assert.deepEqual(local, [], `client ${c} purged ${workflowId}, and sync brought it back`);
      } else {
        assert.deepEqual(local, server, `client ${c} did not converge on the closed ${workflowId}`);
      }
    }
  }
  // The rollback was seen: the rolled-back client wrote again where the server had moved on
  // from what the import brought back, and was told.
  const rolledBack = last[ROLLED_BACK].conflicts.map((conflict) => conflict.workflowId);
  assert.ok(rolledBack.some((id) => id.startsWith(`c${ROLLED_BACK}-`)), `no conflict after the rollback: ${rolledBack}`);
});
