// Export and import of a whole store through the packed package in headless Chromium: a store
// on OPFS exported in one browser profile loads into a fresh profile with every area identical,
// through the leader and through a follower tab, into OPFS and memory stores; a file that is not
// a runstore database is refused and the store stays as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { launchChromium, useTestApp } from './browser.mjs';

const app = useTestApp();

/** The store's schema version: one per migration file of src/sqlite (schema.sql, schema_N.sql). */
const SCHEMA_VERSION = readdirSync(new URL('../../src/sqlite/', import.meta.url)).filter((file) =>
  /^schema(_\d+)?\.sql$/.test(file),
).length;

async function openPage(browser) {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
}

/** Opens `name` in the page as `window.store`, noting change notices in `window.changes`. */
function open(page, name, persistence = 'opfs') {
  return page.evaluate(
    async ({ name, persistence }) => {
      window.store = await window.runstore.RunStore.open(name, { persistence });
      window.changes = [];
      window.store.subscribe(null, (change) => window.changes.push(change));
      return window.store.isLeader;
    },
    { name, persistence },
  );
}

/** Writes to every area in one step. */
function fill(page) {
  return page.evaluate(async () => {
    const now = 1_700_000_000_000;
    const bytes = (...b) => new Uint8Array(b);
    await window.store.commit({
      requestId: 'fill-every-area',
      operations: [
        { op: 'append', workflowId: 'order-1', expectedSeq: 0,
          events: [{ type: 'started', workflowType: 'order', runId: 'r1', recordedAt: now },
                   { type: 'custom', name: 'charged', recordedAt: now + 1, data: { amount: 1999 } }],
          outbox: [{ dispatchKey: 'order-1:ship', workflowId: 'order-1', ordinal: 1, activityType: 'ship', input: bytes(1, 2, 3), visibleAfter: now }] },
        { op: 'insertOutbox', rows: [{ dispatchKey: 'order-1:mail', workflowId: 'order-1', ordinal: 2, activityType: 'mail', input: bytes(4), visibleAfter: now }] },
        { op: 'claimOutbox', now, limit: 1 },
        { op: 'scheduleTimer', workflowId: 'order-1', timerId: 'ship-by', fireAt: now + 86_400_000 },
        { op: 'upsertVisibility', record: { workflowId: 'order-1', runId: 'r1', workflowType: 'order', status: 'running', startTime: now, searchAttributes: { customer: 'ada' }, head: 2 } },
        { op: 'registerNamespace', name: 'shop', origin: 'explicit', now },
        { op: 'putPackage', record: { workflowType: 'order', contentHash: 'a'.repeat(64), archive: bytes(9, 9, 9), deployedAt: now } },
        { op: 'compareAndSwapCheckpoint', checkpoint: { checkpointId: 'agent-1', runId: 'run-a', revision: 0, state: { step: 3 }, updatedAt: now } },
        { op: 'compareAndSwapEffect', record: { effectId: 'effect-1', capabilityId: 'email', idempotencyKey: 'welcome:1', revision: 0, request: { to: 'ada@example.com' }, status: { type: 'prepared' }, updatedAt: now } },
        { op: 'recordRunEvent', event: { eventId: 'ev-1', runId: 'run-a', sequence: 0, recordedAt: now, data: { tool: 'search' } } },
        { op: 'putArtifact', now, artifact: { scope: 'run-a', mediaType: 'text/plain', name: 'notes.txt', bytes: new TextEncoder().encode('hi') } },
        { op: 'saveConversation', state: { conversationId: 'chat-1', revision: 0, formatVersion: 1, state: bytes(7, 7), updatedAt: now } },
      ],
    });
  });
}

/** What every area holds, read through the store's own methods, as JSON. */
function dump(page) {
  return page.evaluate(async () => {
    const s = window.store;
    const plain = (value) => JSON.parse(JSON.stringify(value, (k, v) => (v instanceof Uint8Array ? Array.from(v) : v)));
    const artifacts = (await s.listArtifacts('run-a')).items;
    return plain({
      workflows: await s.listWorkflowIds(),
      history: await s.readHistory('order-1'),
      summary: await s.workflowSummary('order-1'),
      outbox: await s.listOutbox(null),
      timers: await s.listTimers(),
      visibility: await s.getVisibility('order-1'),
      namespaces: await s.listNamespaces(),
      packages: await s.listPackages(),
      archive: await s.getPackage('order', 'a'.repeat(64)),
      checkpoint: await s.loadCheckpoint('agent-1'),
      effect: await s.loadEffect('effect-1'),
      runEvents: await s.readRunEvents('run-a'),
      artifacts,
      artifact: artifacts.length ? await s.getArtifact('run-a', artifacts[0].artifactId) : null,
      conversation: await s.loadConversation('chat-1'),
      request: await s.requestOutcome('fill-every-area'),
    });
  });
}

/** The store's export, as an array of numbers (what page.evaluate carries). */
function exported(page) {
  return page.evaluate(async () => Array.from(await window.store.exportDatabase()));
}

/** Imports `bytes` (an array of numbers); resolves to the outcome, or the error's code and field. */
function importInto(page, bytes, requestId) {
  return page.evaluate(
    ({ bytes, requestId }) =>
      window.store.importDatabase(new Uint8Array(bytes), requestId).then(
        (outcome) => ({ outcome }),
        (e) => ({ code: e.code, field: e.field, message: e.message }),
      ),
    { bytes, requestId },
  );
}

test('a store exported on OPFS loads into a fresh profile, leader and follower alike, every area identical', async () => {
  const source = await openPage(app.browser);
  await open(source, 'export-source');
  await fill(source);
  const original = await dump(source);
  assert.equal(original.history.items.length, 2);
  assert.equal(original.outbox.items.length, 2);
  const file = await exported(source);
  assert.deepEqual(file.slice(0, 15), [...new TextEncoder().encode('SQLite format 3')]);
  // A follower tab's export comes from the leader's worker: the same file.
  const follower = await openPage(app.browser);
  assert.equal(await open(follower, 'export-source'), false);
  assert.deepEqual(await exported(follower), file);

  const fresh = await launchChromium();
  try {
    const leader = await openPage(fresh);
    assert.equal(await open(leader, 'imported'), true);
    await leader.evaluate(() => window.store.append('replaced-by-import', [{ type: 'custom', name: 'gone', recordedAt: 1 }], 0));
    const other = await openPage(fresh);
    assert.equal(await open(other, 'imported'), false);
    // Imported through the follower: the leader's worker applies it, every tab hears of it.
    const result = await importInto(other, file);
    assert.deepEqual(result, { outcome: { schemaVersion: SCHEMA_VERSION, replayed: false } });
    assert.deepEqual(await dump(leader), original);
    assert.deepEqual(await dump(other), original);
    assert.deepEqual(await leader.evaluate(() => window.store.listWorkflowIds()), { items: ['order-1'], nextCursor: null });
    for (const page of [leader, other]) {
      const notices = await page.evaluate(() => window.changes.filter((c) => c.areas.length === 11));
      assert.equal(notices.length, 1, 'one change notice naming every area');
    }
    // Under the same request id, a second import changes nothing.
    await importInto(leader, file, 'import-once');
    await leader.evaluate(() => window.store.append('after-import', [{ type: 'custom', name: 'kept', recordedAt: 1 }], 0));
    assert.deepEqual(await importInto(other, file, 'import-once'), { outcome: { schemaVersion: SCHEMA_VERSION, replayed: true } });
    assert.equal((await leader.evaluate(() => window.store.listWorkflowIds())).items.length, 2);
    // It is on OPFS: a reload finds it.
    const beforeReload = await dump(leader);
    await other.close();
    await leader.reload();
    await leader.waitForFunction(() => window.runstore !== undefined);
    await open(leader, 'imported');
    assert.deepEqual(await dump(leader), beforeReload);
    // And a memory store takes the same file.
    const memory = await openPage(fresh);
    await open(memory, 'in-memory', 'memory');
    assert.deepEqual(await importInto(memory, file), { outcome: { schemaVersion: SCHEMA_VERSION, replayed: false } });
    assert.deepEqual(await dump(memory), original);
  } finally {
    await fresh.close();
  }
});

test('a file that is not a runstore database is refused and the store stays as it was', async () => {
  const page = await openPage(app.browser);
  await open(page, 'refuses-bad-files');
  await fill(page);
  // A shared store tells every tab, this one too, of a commit after answering it: the fill's
  // change may come after its promise settled. It is awaited before the slate is cleared.
  await page.waitForFunction(() => window.changes.some((change) => change.requestId === 'fill-every-area'));
  await page.evaluate(() => (window.changes = []));
  const before = await dump(page);
  const good = await exported(page);
  const notSqlite = [...new TextEncoder().encode('name,amount\nada,1999\n')];
  const damaged = good.map((byte, i) => (i >= 8192 && i < 8192 * 3 ? 0x5a : byte));
  const cut = good.slice(0, good.length - 8192);
  // A database whose schema version says it is none of runstore's (user_version, offset 60).
  const unversioned = good.map((byte, i) => (i >= 60 && i < 64 ? 0 : byte));
  for (const [name, bytes] of Object.entries({ notSqlite, damaged, cut, unversioned })) {
    const result = await importInto(page, bytes, `bad-${name}`);
    assert.equal(result.code, 'INVALID_INPUT', `${name}: ${result.message}`);
    assert.equal(result.field, 'bytes', name);
    assert.notEqual((await page.evaluate((id) => window.store.requestOutcome(id), `bad-${name}`)).status, 'committed');
  }
  const newer = good.map((byte, i) => (i === 63 ? 99 : byte));
  const tooNew = await importInto(page, newer);
  assert.equal(tooNew.code, 'SCHEMA_TOO_NEW', tooNew.message);
  const notBytes = await page.evaluate(() =>
    window.store.importDatabase(new ArrayBuffer(8)).catch((e) => ({ code: e.code, field: e.field })),
  );
  assert.deepEqual(notBytes, { code: 'INVALID_INPUT', field: 'bytes' });
  assert.deepEqual(await dump(page), before);
  assert.equal(await page.evaluate(() => window.changes.length), 0, 'no change announced');
});
