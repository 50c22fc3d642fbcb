// Sync end to end (SPEC §8): two Chromium profiles, each with its own OPFS store opened through
// the packed package, sync through the runstore-sync binary on PostgreSQL (scripts/test-sync.sh
// starts a throwaway cluster). Both write offline, then sync; a workflow written on both sides
// surfaces as SEQUENCE_CONFLICT with both heads; the server killed mid-sync and restarted
// loses and duplicates nothing; a wrong or missing token changes nothing; a live sync follows
// the other profile's writes; leases fence pushes, and runstore/workflow hands a run over from
// a page gone offline to another.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PageClient } from './sync-clients.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const TOKEN = 'token-team';
const OTHER_TOKEN = 'token-other';
const NAMESPACE = 'team';
const TEST_APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'app', 'dist');

let settings;
let server = null;
/** Each profile: the package in a Chromium page of its own, a RunStore on OPFS as `window.store`. */
const profiles = {};

before(async () => {
  settings = syncServerSettings(await freePort(), { [TOKEN]: [NAMESPACE], [OTHER_TOKEN]: ['other'] });
  console.log(`sync server on ${settings.backend}`);
  for (const name of ['a', 'b']) profiles[name] = await PageClient.open(`sync-${name}`, TEST_APP);
});

after(async () => {
  for (const profile of Object.values(profiles)) await profile.close();
  await server?.stop();
});

const ev = (name, at) => ({ type: 'custom', name, recordedAt: at, data: { name, at } });

/** Appends `events` to `workflowId` in the profile's store under its current head. */
function append(profile, workflowId, events) {
  return profiles[profile].page.evaluate(
    async ({ workflowId, events }) => window.store.append(workflowId, events, await window.store.head(workflowId)),
    { workflowId, events },
  );
}

/** One sync of the profile's store; its summary, or its error, as plain data. */
function sync(profile, options = {}) {
  return profiles[profile].page.evaluate(
    async ({ url, token, namespace, options }) => {
      const plain = (e) => ({ ...e, code: e.code, message: e.message, isRunStoreError: e instanceof window.runstore.RunStoreError });
      try {
        const summary = await window.store.sync({ url, token, namespace, ...options });
        return { summary: { ...summary, conflicts: summary.conflicts.map(plain) } };
      } catch (error) {
        return { error: plain(error) };
      }
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE, options },
  );
}

/** The profile's events of `workflowId` as [seq, name] pairs. */
function history(profile, workflowId) {
  return profiles[profile].page.evaluate(async (workflowId) => {
    const page = await window.store.readHistory(workflowId, { limit: 10000 });
    return page.items.map((e) => [e.seq, e.name]);
  }, workflowId);
}

/** A call of the server's API from here. */
async function api(path, token = TOKEN) {
  const response = await fetch(`${settings.url}/v1/namespaces/${NAMESPACE}/${path}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: response.status, body: await response.json() };
}

/** A POST to the server's API from here. */
async function apiPost(path, body) {
  const response = await fetch(`${settings.url}/v1/namespaces/${NAMESPACE}/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** One sync of the profile's store with `leases` (workflow id → `{ holder, epoch }`) as its `leases` option. */
function syncUnder(profile, leases) {
  return profiles[profile].page.evaluate(
    async ({ url, token, namespace, leases }) => {
      const plain = (e) => ({ ...e, code: e.code, message: e.message, isRunStoreError: e instanceof window.runstore.RunStoreError });
      const summary = await window.store.sync({ url, token, namespace, leases: (workflowId) => leases[workflowId] ?? null });
      return { ...summary, conflicts: summary.conflicts.map(plain) };
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE, leases },
  );
}

async function serverHistory(workflowId) {
  const { body } = await api(`workflows/${encodeURIComponent(workflowId)}/events?limit=1000`);
  return body.events.map((e) => [e.seq, e.name]);
}

test('both profiles write offline, then sync; a workflow written on both is a conflict with both heads', async () => {
  await append('a', 'a-1', [
    { type: 'started', workflowType: 'order', runId: 'r1', recordedAt: 1 },
    ev('a-step', 2),
    ev('a-done', 3),
  ]);
  await append('a', 'shared', [ev('from-a', 1), ev('from-a-2', 2)]);
  await append('b', 'b-1', [ev('b-step', 1), ev('b-done', 2)]);
  await append('b', 'shared', [ev('from-b', 1)]);

  // No server yet: offline. The sync fails with UNAVAILABLE and nothing is lost.
  const offline = await sync('a');
  assert.equal(offline.error?.code, 'UNAVAILABLE', JSON.stringify(offline));
  assert.equal(offline.error.isRunStoreError, true);

  server = await startSyncServer(settings);
  const first = await sync('a');
  assert.deepEqual(first.summary?.pushed, { workflows: 2, events: 5 }, JSON.stringify(first));
  assert.deepEqual(first.summary.conflicts, []);

  const second = await sync('b');
  assert.deepEqual(second.summary?.pushed, { workflows: 1, events: 2 }, JSON.stringify(second));
  assert.deepEqual(second.summary.pulled, { workflows: 1, events: 3 });
  assert.equal(second.summary.conflicts.length, 1);
  const [conflict] = second.summary.conflicts;
  assert.equal(conflict.code, 'SEQUENCE_CONFLICT');
  assert.equal(conflict.isRunStoreError, true);
  assert.equal(conflict.workflowId, 'shared');
  assert.deepEqual([conflict.expected, conflict.localHead, conflict.serverHead, conflict.actual], [0, 1, 2, 2]);
  assert.deepEqual(conflict.serverEvents.map((e) => [e.seq, e.name]), [[1, 'from-a'], [2, 'from-a-2']]);

  const third = await sync('a');
  assert.deepEqual(third.summary?.pulled, { workflows: 1, events: 2 }, JSON.stringify(third));

  for (const workflowId of ['a-1', 'b-1']) {
    const expected = await history(workflowId === 'a-1' ? 'a' : 'b', workflowId);
    assert.deepEqual(await history('a', workflowId), expected);
    assert.deepEqual(await history('b', workflowId), expected);
    assert.deepEqual(await serverHistory(workflowId), expected);
  }
  // Never merged: each side keeps its own, the server has the first pushed.
  assert.deepEqual(await history('b', 'shared'), [[1, 'from-b']]);
  assert.deepEqual(await history('a', 'shared'), [[1, 'from-a'], [2, 'from-a-2']]);
  assert.deepEqual(await serverHistory('shared'), [[1, 'from-a'], [2, 'from-a-2']]);

  // Syncing again moves nothing and reports the conflict again.
  const again = await sync('b');
  assert.deepEqual([again.summary.pushed.events, again.summary.pulled.events, again.summary.conflicts.length], [0, 0, 1]);
});

test('a wrong, foreign or missing token changes nothing', async () => {
  await append('b', 'b-2', [ev('secret', 1)]);
  const before = (await api('changes')).body.cursor;

  const wrong = await sync('b', { token: 'not-a-token' });
  assert.deepEqual([wrong.error?.code, wrong.error?.httpStatus], ['UNAUTHORIZED', 401], JSON.stringify(wrong));
  const foreign = await sync('b', { token: OTHER_TOKEN });
  assert.deepEqual([foreign.error?.code, foreign.error?.httpStatus], ['UNAUTHORIZED', 403]);
  const missing = await sync('b', { token: '' });
  assert.deepEqual([missing.error?.code, missing.error?.field], ['INVALID_INPUT', 'options.token']);
  const noHeader = await api('changes', null);
  assert.deepEqual([noHeader.status, noHeader.body.code], [401, 'UNAUTHORIZED']);

  assert.equal((await api('changes')).body.cursor, before);
  assert.deepEqual(await serverHistory('b-2'), []);

  const good = await sync('b');
  assert.deepEqual(good.summary?.pushed, { workflows: 1, events: 1 }, JSON.stringify(good));
  assert.deepEqual(await serverHistory('b-2'), [[1, 'secret']]);
});

test('the server killed mid-sync and restarted loses and duplicates nothing', async () => {
  const WORKFLOWS = 150;
  const EVENTS = 4;
  await profiles.a.page.evaluate(
    async ({ WORKFLOWS, EVENTS }) => {
      for (let w = 0; w < WORKFLOWS; w += 1) {
        const events = Array.from({ length: EVENTS }, (_, i) => ({ type: 'custom', name: `e${i + 1}`, recordedAt: i, data: { w, i } }));
        await window.store.append(`bulk-${w}`, events, 0);
      }
    },
    { WORKFLOWS, EVENTS },
  );
  const start = (await api('changes')).body.cursor;
  await profiles.a.page.evaluate(
    ({ url, token, namespace }) => {
      window.pendingSync = window.store.sync({ url, token, namespace }).then(
        (summary) => ({ summary }),
        (error) => ({ error: { code: error.code, message: error.message } }),
      );
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  // Kill the server once some pushes, not all, have landed.
  for (;;) {
    const { body } = await api('changes');
    if (body.cursor - start >= 10) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await server.stop('SIGKILL');
  const interrupted = await profiles.a.page.evaluate(() => window.pendingSync);
  assert.equal(interrupted.error?.code, 'UNAVAILABLE', JSON.stringify(interrupted));

  server = await startSyncServer(settings);
  const resumed = await sync('a');
  assert.ok(resumed.summary, JSON.stringify(resumed));
  assert.ok(resumed.summary.pushed.workflows > 0 && resumed.summary.pushed.workflows < WORKFLOWS, JSON.stringify(resumed.summary));

  // Every workflow on the server exactly as written, once; one feed entry per push.
  const expected = Array.from({ length: EVENTS }, (_, i) => [i + 1, `e${i + 1}`]);
  for (let w = 0; w < WORKFLOWS; w += 1) {
    assert.deepEqual(await serverHistory(`bulk-${w}`), expected, `bulk-${w}`);
  }
  const feed = (await api(`changes?after=${start}`)).body;
  assert.equal(feed.cursor - start, WORKFLOWS, 'each workflow was pushed once');

  const pulled = await sync('b');
  assert.deepEqual(pulled.summary?.pulled, { workflows: WORKFLOWS, events: WORKFLOWS * EVENTS }, JSON.stringify(pulled));
  for (const w of [0, 74, WORKFLOWS - 1]) assert.deepEqual(await history('b', `bulk-${w}`), expected);
  const settled = await sync('a');
  assert.deepEqual([settled.summary.pushed.events, settled.summary.pulled.events], [0, 0]);
});

test('a live sync follows the other profile until it is aborted', async () => {
  await profiles.b.page.evaluate(
    ({ url, token, namespace }) => {
      window.liveProgress = [];
      window.liveAbort = new AbortController();
      window.liveSync = window.store.sync({ url, token, namespace, live: true, signal: window.liveAbort.signal, onProgress: (p) => window.liveProgress.push(p.type) });
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  await append('a', 'live-1', [ev('hello', 1)]);
  assert.equal((await sync('a')).summary?.pushed.events, 1);
  for (let tries = 0; (await history('b', 'live-1')).length === 0; tries += 1) {
    assert.ok(tries < 200, 'the live sync pulled the other profile\'s append');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // And the other way: a local append in b is pushed without another call.
  await append('b', 'live-2', [ev('from-live', 1)]);
  for (let tries = 0; (await serverHistory('live-2')).length === 0; tries += 1) {
    assert.ok(tries < 200, 'the live sync pushed the local append');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const ended = await profiles.b.page.evaluate(async () => {
    window.liveAbort.abort();
    const summary = await window.liveSync;
    return { summary, progress: window.liveProgress };
  });
  assert.ok(ended.progress.includes('pulled') && ended.progress.includes('synced'), JSON.stringify(ended.progress));
  assert.ok(ended.summary && typeof ended.summary.cursor === 'number');
});

test('a live sync pushes only the workflows a local change named, after a first pass over all', async () => {
  for (let i = 0; i < 30; i += 1) await append('b', `many-${i}`, [ev('one', 1)]);
  await profiles.b.page.evaluate(
    ({ url, token, namespace }) => {
      window.reads = [];
      window.passes = 0;
      // The same store, counting the local history reads the sync makes.
      const counting = new Proxy(window.store, {
        get(target, key) {
          const value = target[key];
          if (key === 'sync' || typeof value !== 'function') return value;
          return (...args) => {
            if (key === 'readHistoryFrom') window.reads.push(args[0]);
            return value.apply(target, args);
          };
        },
      });
      window.countAbort = new AbortController();
      window.countSync = counting.sync({
        url, token, namespace, live: true, signal: window.countAbort.signal,
        onProgress: (p) => { if (p.type === 'synced') window.passes += 1; },
      });
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  const passes = () => profiles.b.page.evaluate(() => window.passes);
  for (let tries = 0; (await passes()) === 0; tries += 1) {
    assert.ok(tries < 200, 'the first live pass ended');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const first = await profiles.b.page.evaluate(() => window.reads.splice(0));
  for (let i = 0; i < 30; i += 1) assert.ok(first.includes(`many-${i}`), `the first pass read many-${i}`);
  const before = await passes();
  await append('b', 'many-7', [ev('two', 2)]);
  for (let tries = 0; (await serverHistory('many-7')).length < 2 || (await passes()) === before; tries += 1) {
    assert.ok(tries < 200, 'the live sync pushed the local append');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const later = await profiles.b.page.evaluate(async () => {
    window.countAbort.abort();
    await window.countSync;
    return window.reads;
  });
  assert.ok(later.length > 0 && later.every((id) => id === 'many-7'), JSON.stringify(later));
  assert.deepEqual(await serverHistory('many-7'), [[1, 'one'], [2, 'two']]);
});

test('a store rolled back by an import that writes other events gets a conflict, never a silent replay', async () => {
  const outcome = await profiles.a.page.evaluate(
    async ({ url, token, namespace }) => {
      const store = await window.runstore.RunStore.open('sync-rolled', { persistence: 'opfs' });
      const options = { url, token, namespace };
      const ev = (name) => ({ type: 'custom', name, recordedAt: 1, data: { name } });
      try {
        await store.sync(options);
        const before = await store.exportDatabase();
        await store.append('rolled', [ev('first-1'), ev('first-2')], 0);
        const pushed = await store.sync(options);
        // The local store loses that state, and the app writes two other events.
        await store.importDatabase(before);
        await store.append('rolled', [ev('second-1'), ev('second-2')], 0);
        const after = await store.sync(options);
        const local = (await store.readHistory('rolled')).items.map((e) => e.name);
        return {
          pushed: pushed.pushed,
          conflicts: after.conflicts.map((c) => ({ code: c.code, workflowId: c.workflowId, localHead: c.localHead, serverHead: c.serverHead })),
          local,
        };
      } finally {
        await store.close();
      }
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  assert.deepEqual(outcome.pushed, { workflows: 1, events: 2 }, JSON.stringify(outcome));
  assert.deepEqual(outcome.conflicts, [{ code: 'SEQUENCE_CONFLICT', workflowId: 'rolled', localHead: 2, serverHead: 2 }], JSON.stringify(outcome));
  assert.deepEqual(outcome.local, ['second-1', 'second-2']);
  assert.deepEqual(await serverHistory('rolled'), [[1, 'first-1'], [2, 'first-2']]);
});

test('a purged workflow is not pulled back unless asked, and its id written again is a conflict, never pushed onto the old history', async () => {
  const outcome = await profiles.a.page.evaluate(
    async ({ url, token, namespace }) => {
      const store = await window.runstore.RunStore.open('sync-purge', { persistence: 'opfs' });
      const options = { url, token, namespace };
      const names = async (id) => (await store.readHistory(id)).items.map((e) => e.name);
      try {
        await store.append('purged-1', [
          { type: 'started', workflowType: 'order', runId: 'r1', recordedAt: 1 },
          { type: 'completed', recordedAt: 2 },
        ], 0);
        await store.sync(options);
        const purged = await store.purgeWorkflows(10, 10);
        const afterPurge = await store.sync(options);
        const pulledBack = await names('purged-1');
        // The id written again: a new run at seq 1 here, while the server holds 2 events.
        await store.append('purged-1', [{ type: 'started', workflowType: 'order', runId: 'r2', recordedAt: 30 }], 0);
        const reused = await store.sync(options);
        return {
          purged: purged.workflows,
          afterPurge: afterPurge.pulled,
          pulledBack,
          conflicts: reused.conflicts.map((c) => ({ code: c.code, workflowId: c.workflowId, purged: c.purged, localHead: c.localHead })),
          pushed: reused.pushed,
        };
      } finally {
        await store.close();
      }
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  assert.equal(outcome.purged, 1, JSON.stringify(outcome));
  assert.deepEqual(outcome.afterPurge, { workflows: 0, events: 0 });
  assert.deepEqual(outcome.pulledBack, []);
  assert.deepEqual(outcome.conflicts, [{ code: 'SEQUENCE_CONFLICT', workflowId: 'purged-1', purged: true, localHead: 1 }], JSON.stringify(outcome));
  assert.deepEqual(outcome.pushed, { workflows: 0, events: 0 });
  assert.deepEqual(await serverHistory('purged-1'), [[1, undefined], [2, undefined]]);

  // Asked for, the server's history comes back into a store that purged it (and wrote nothing under its id since).
  const restored = await profiles.b.page.evaluate(
    async ({ url, token, namespace }) => {
      const store = await window.runstore.RunStore.open('sync-restore', { persistence: 'opfs' });
      const options = { url, token, namespace };
      try {
        await store.sync(options);
        const before = (await store.readHistory('purged-1')).items.length;
        await store.purgeWorkflows(10, 10);
        const again = await store.sync(options);
        const gone = (await store.readHistory('purged-1')).items.length;
        const back = await store.sync({ ...options, restorePurged: true });
        return { before, gone, again: again.pulled.events, back: back.pulled, after: (await store.readHistory('purged-1')).items.map((e) => e.type) };
      } finally {
        await store.close();
      }
    },
    { url: settings.url, token: TOKEN, namespace: NAMESPACE },
  );
  assert.deepEqual(restored, { before: 2, gone: 0, again: 0, back: { workflows: 1, events: 2 }, after: ['started', 'completed'] });
});

test('bad options and malformed or unknown server answers reject with a documented code', async () => {
  const outcome = await profiles.a.page.evaluate(async () => {
    const store = window.store;
    const { RunStoreError } = window.runstore;
    const codes = new Set(Object.keys(window.runstore.ErrorCode));
    const attempt = async (options) => {
      try {
        await store.sync(options);
        return { resolved: true };
      } catch (error) {
        return { isRunStoreError: error instanceof RunStoreError, documented: codes.has(error.code), code: error.code, field: error.field, serverCode: error.serverCode };
      }
    };
    const answering = (status, body) => async () => new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    const base = { url: 'http://127.0.0.1:9', token: 't' };
    const throwing = { ...base };
    Object.defineProperty(throwing, 'namespace', { get() { throw new Error('boom'); } });
    return {
      noOptions: await attempt(undefined),
      badUrl: await attempt({ ...base, url: 42 }),
      ftp: await attempt({ ...base, url: 'ftp://example.com' }),
      badToken: await attempt({ ...base, token: ['t'] }),
      badNamespace: await attempt({ ...base, namespace: 'a/b' }),
      badLive: await attempt({ ...base, live: 'yes' }),
      badSignal: await attempt({ ...base, signal: {} }),
      badFetch: await attempt({ ...base, fetch: 'fetch' }),
      badLeases: await attempt({ ...base, leases: {} }),
      badLease: await attempt({ ...base, leases: () => ({ holder: 'laptop', epoch: 0 }) }),
      throwingGetter: await attempt(throwing),
      emptyAnswer: await attempt({ ...base, fetch: answering(200, {}) }),
      notJson: await attempt({ ...base, fetch: answering(200, 'hello') }),
      weirdCode: await attempt({ ...base, fetch: answering(400, { code: 'WEIRD', message: 'no' }) }),
      codeless: await attempt({ ...base, fetch: answering(500, { oops: true }) }),
      badConflict: await attempt({ ...base, fetch: answering(409, { code: 'SEQUENCE_CONFLICT', expected: 'x' }) }),
    };
  });
  for (const [name, result] of Object.entries(outcome)) {
    assert.equal(result.isRunStoreError, true, `${name}: ${JSON.stringify(result)}`);
    assert.equal(result.documented, true, `${name}: ${JSON.stringify(result)}`);
  }
  assert.deepEqual(
    Object.fromEntries(Object.entries(outcome).map(([name, r]) => [name, [r.code, r.field ?? r.serverCode ?? null]])),
    {
      noOptions: ['INVALID_INPUT', 'options'],
      badUrl: ['INVALID_INPUT', 'options.url'],
      ftp: ['INVALID_INPUT', 'options.url'],
      badToken: ['INVALID_INPUT', 'options.token'],
      badNamespace: ['INVALID_INPUT', 'options.namespace'],
      badLive: ['INVALID_INPUT', 'options.live'],
      badSignal: ['INVALID_INPUT', 'options.signal'],
      badFetch: ['INVALID_INPUT', 'options.fetch'],
      badLeases: ['INVALID_INPUT', 'options.leases'],
      badLease: ['INVALID_INPUT', 'options.leases'],
      throwingGetter: ['INVALID_INPUT', 'options.namespace'],
      emptyAnswer: ['SERIALIZATION', null],
      notJson: ['SERIALIZATION', null],
      weirdCode: ['BACKEND', 'WEIRD'],
      codeless: ['BACKEND', null],
      badConflict: ['SERIALIZATION', null],
    },
  );
});

test('a page that cannot load the sync code gets UNAVAILABLE, and syncs once it can', async () => {
  server ??= await startSyncServer(settings);
  const profile = await PageClient.open('sync-offline', TEST_APP);
  try {
    // `store.sync()` loads its code on its first call: this page is cut off from that file.
    const chunk = /\/assets\/sync-[\w-]+\.js$/;
    await profile.page.route(chunk, (route) => route.abort('internetdisconnected'));
    const attempt = () =>
      profile.page.evaluate(async ({ url, token, namespace }) => {
        try {
          const summary = await window.store.sync({ url, token, namespace });
          return { pulled: summary.pulled };
        } catch (error) {
          return { code: error.code, isRunStoreError: error instanceof window.runstore.RunStoreError, message: error.message };
        }
      }, { url: settings.url, token: TOKEN, namespace: NAMESPACE });
    const cut = await attempt();
    assert.equal(cut.code, 'UNAVAILABLE', JSON.stringify(cut));
    assert.equal(cut.isRunStoreError, true, JSON.stringify(cut));
    await profile.page.unroute(chunk);
    const synced = await attempt();
    assert.ok(synced.pulled?.workflows > 0, JSON.stringify(synced));
  } finally {
    await profile.close();
  }
});

test("a workflow the server holds leased by another device is reported FENCED and not pushed; under its lease it is, under an older epoch it is fenced", async () => {
  server ??= await startSyncServer(settings);
  await append('a', 'leased-1', [ev('l1', 1), ev('l2', 2)]);
  await append('a', 'free-1', [ev('f1', 1)]);
  const taken = await apiPost('workflows/leased-1/lease', { holder: 'laptop', ttlMs: 600_000 });
  assert.equal(taken.body.epoch, 1, JSON.stringify(taken));

  // Without the lease: the leased workflow is reported, the others are pushed.
  const plain = await syncUnder('a', {});
  const fenced = plain.conflicts.filter((c) => c.workflowId === 'leased-1');
  assert.equal(fenced.length, 1, JSON.stringify(plain.conflicts));
  assert.deepEqual(
    { code: fenced[0].code, isRunStoreError: fenced[0].isRunStoreError, currentHolder: fenced[0].currentHolder, currentEpoch: fenced[0].currentEpoch, holder: fenced[0].holder },
    { code: 'FENCED', isRunStoreError: true, currentHolder: 'laptop', currentEpoch: 1, holder: undefined },
  );
  assert.deepEqual(await serverHistory('free-1'), [[1, 'f1']]);
  assert.deepEqual(await serverHistory('leased-1'), [], 'nothing of the leased workflow was pushed');

  // Under its lease it is pushed.
  const leased = await syncUnder('a', { 'leased-1': { holder: 'laptop', epoch: 1 } });
  assert.deepEqual(leased.conflicts.filter((c) => c.workflowId === 'leased-1'), []);
  assert.deepEqual(await serverHistory('leased-1'), [[1, 'l1'], [2, 'l2']]);

  // Taken over by another device (one epoch up): the former holder's next push is fenced.
  assert.equal((await apiPost('workflows/leased-1/lease/release', { holder: 'laptop', epoch: 1 })).status, 200);
  assert.equal((await apiPost('workflows/leased-1/lease', { holder: 'phone', ttlMs: 600_000 })).body.epoch, 2);
  await append('a', 'leased-1', [ev('l3', 3)]);
  const stale = await syncUnder('a', { 'leased-1': { holder: 'laptop', epoch: 1 } });
  const lost = stale.conflicts.find((c) => c.workflowId === 'leased-1');
  assert.deepEqual(
    { code: lost?.code, workflowId: lost?.workflowId, holder: lost?.holder, epoch: lost?.epoch, currentHolder: lost?.currentHolder, currentEpoch: lost?.currentEpoch },
    { code: 'FENCED', workflowId: 'leased-1', holder: 'laptop', epoch: 1, currentHolder: 'phone', currentEpoch: 2 },
  );
  assert.deepEqual(await serverHistory('leased-1'), [[1, 'l1'], [2, 'l2']], 'the fenced push wrote nothing');
});

test('runstore/workflow with leases in Chromium: a run whose page goes offline stops there by its own clock, and the other page takes it over once the lease expires, pulls its first step and finishes it', async () => {
  server ??= await startSyncServer(settings);
  const target = { url: settings.url, token: TOKEN, namespace: NAMESPACE };
  const pages = { a: await PageClient.open('lease-a', TEST_APP), b: await PageClient.open('lease-b', TEST_APP) };
  /** Calls `fn` of the page's src/leases-page.js. */
  const call = (name, fn, ...args) => pages[name].page.evaluate(async ({ fn, args }) => (await window.leasesPage())[fn](...args), { fn, args });
  const until = async (check, what) => {
    const end = Date.now() + 30_000;
    for (let value; !(value = await check()); await new Promise((resolve) => setTimeout(resolve, 50))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    }
  };
  const id = 'page-handover';
  try {
    const deviceA = await call('a', 'startEngine', 'a', target, 1_500);
    await call('a', 'startRun', id);
    await until(async () => (await call('a', 'describe', id)).waiting === 'sleep gap', 'the run to sleep on page a');
    assert.deepEqual(await call('a', 'sync', target), []);
    const { lease } = (await api(`workflows/${id}/lease`)).body;
    assert.deepEqual([lease.holder, lease.epoch, lease.live], [deviceA, 1, true]);

    // Page a goes offline (the browser's own emulation: every request fails) during the sleep;
    // page b, which never synced, starts its engine: it cannot have the run before it pulls.
    await pages.a.page.context().setOffline(true);
    const deviceB = await call('b', 'startEngine', 'b', target, 1_500);
    await pages.b.page.evaluate((target) => window.store.sync(target), target);
    await until(async () => (await call('b', 'describe', id).catch(() => null))?.status === 'completed', 'page b to finish the run');
    assert.deepEqual(await call('b', 'result', id), { one: 'a', two: 'b' });
    assert.deepEqual(await call('a', 'ranHere'), [['one', 'a']], 'page a stopped the run before its second step');
    assert.deepEqual(await call('b', 'ranHere'), [['two', 'b']], 'page b ran only the second step');
    await until(async () => (await api(`workflows/${id}/lease`)).body.lease?.live === false, 'page b to give the lease up');
    const released = (await api(`workflows/${id}/lease`)).body.lease;
    assert.deepEqual([released.holder, released.epoch], [deviceB, 2]);

    // Page a back online: its engine asks for the run again and pulls its end; it runs nothing.
    await pages.a.page.context().setOffline(false);
    await until(async () => (await call('a', 'summary', id)).status === 'completed', 'page a to pull the end');
    assert.deepEqual(await call('a', 'ranHere'), [['one', 'a']]);
  } finally {
    for (const name of ['a', 'b']) {
      await call(name, 'stop').catch(() => {});
      await pages[name].close();
    }
  }
});
