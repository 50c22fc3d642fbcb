// Sync state past the size that wedged it: the heads of all workflows lived in one checkpoint
// capped at 1 MiB, so about 25,000 workflows of 40-character ids (here 5,000 of 220 characters,
// the same megabyte) made every later save fail for good. A store pulls them from the
// runstore-sync binary on PostgreSQL, then appends to three, and its next pass reads and pushes
// those three only. The stores are the package's own (runstore/core in Node, on memory);
// scripts/test-sync.sh runs this; scripts/bench-sync-scale.sh measures 100,000 workflows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { syncStore } from '../../js/sync.js';
import { openMemoryStore, inLanes } from './node-store.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const TOKEN = 'token-scale';
const WORKFLOWS = 5_000;
/** 220 characters: 5,000 of these and their heads are over 1 MiB of JSON. */
const id = (n) => `${'workflow-with-a-long-id-'.repeat(9)}${String(n).padStart(4, '0')}`;

let settings;
let server;

before(async () => {
  settings = syncServerSettings(await freePort(), { [TOKEN]: ['scale'] });
  server = await startSyncServer(settings);
});

after(async () => {
  await server?.stop();
});

test('5,000 synced workflows of long ids keep syncing, and a pass reads only what changed', { timeout: 900_000 }, async () => {
  const started = Date.now();
  await inLanes(WORKFLOWS, 16, async (n) => {
    const response = await fetch(`${settings.url}/v1/namespaces/scale/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: `seed-${n}`, workflowId: id(n), expectedHead: 0, events: [{ type: 'custom', name: 'seeded', recordedAt: n, data: { n } }] }),
    });
    assert.equal(response.status, 200, await response.text());
  });
  console.log(`# seeded ${WORKFLOWS} workflows in ${Date.now() - started} ms`);

  const store = await openMemoryStore('scale');
  const options = { url: settings.url, token: TOKEN, namespace: 'scale' };
  const first = await syncStore(store, options);
  assert.deepEqual(first.pulled, { workflows: WORKFLOWS, events: WORKFLOWS });
  assert.deepEqual(first.conflicts, []);
  console.log(`# first sync pulled ${WORKFLOWS} workflows, ${Date.now() - started} ms in`);

  for (const n of [7, 2_345, 4_999]) store.append(id(n), [{ type: 'custom', name: 'local', recordedAt: 1, data: {} }], 1);
  const reads = [];
  const counting = new Proxy(store, {
    get(target, key) {
      const value = target[key];
      if (typeof value !== 'function') return value;
      return (...args) => {
        if (key === 'readHistoryFrom') reads.push(args[0]);
        return value.apply(target, args);
      };
    },
  });
  const second = await syncStore(counting, options);
  assert.deepEqual(second.pushed, { workflows: 3, events: 3 });
  assert.deepEqual([...new Set(reads)].sort(), [id(7), id(2_345), id(4_999)]);
  const third = await syncStore(counting, options);
  assert.deepEqual([third.pushed.events, third.pulled.events, third.conflicts.length], [0, 0, 0]);
  const server2345 = await (await fetch(`${settings.url}/v1/namespaces/scale/workflows/${id(2_345)}/events`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
  assert.deepEqual(server2345.events.map((e) => e.name), ['seeded', 'local']);
  await store.close();
});
