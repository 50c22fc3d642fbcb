// Change notices on the page (js/changes.js): what `subscribe` refuses, each request id
// delivered once however often it is announced (a write sent again after a hand-off is
// announced again, for the tabs that missed the first notice), and numbered changes delivered
// in the feed's order, once, with what a tab did not hear read from a real store's feed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Changes, MAX_UNANNOUNCED } from '../../js/changes.js';
import { RunStoreError } from '../../js/errors.js';
import { openMemoryStore } from './node-store.mjs';

const change = (requestId, areas = ['journal'], workflowIds = ['wf']) => ({ requestId, areas, workflowIds, heads: {}, revisions: [] });

test('bad filters and callbacks are a RunStoreError INVALID_INPUT naming the field, never a plain Error', () => {
  const changes = new Changes();
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const throwing = Object.defineProperty({}, 'areas', { enumerable: true, get: () => { throw new Error('getter'); } });
  const sparse = [];
  sparse.length = 2 ** 32 - 1;
  const cases = [
    [{ areas: ['nope'] }, () => {}, 'filter.areas'],
    [{ areas: 'journal' }, () => {}, 'filter.areas'],
    [{ areas: [1] }, () => {}, 'filter.areas'],
    [{ workflowIds: sparse }, () => {}, 'filter.workflowIds'],
    [{ workflowIds: new Proxy(['wf'], { get: () => { throw new Error('trap'); } }) }, () => {}, 'filter'],
    [{ junk: 1 }, () => {}, 'filter.junk'],
    [42, () => {}, 'filter'],
    ['journal', () => {}, 'filter'],
    [['journal'], () => {}, 'filter'],
    [revoked.proxy, () => {}, 'filter'],
    [throwing, () => {}, 'filter'],
    [null, 'not a function', 'callback'],
    [null, undefined, 'callback'],
  ];
  for (const [index, [filter, callback, field]] of cases.entries()) {
    assert.throws(
      () => changes.subscribe(filter, callback),
      (error) => error instanceof RunStoreError && error.code === 'INVALID_INPUT' && error.field === field,
      `case ${index}: ${field}`,
    );
  }
});

test('a filter is read once: changing it afterwards changes nothing', () => {
  const changes = new Changes();
  const heard = [];
  const filter = { workflowIds: ['a'] };
  changes.subscribe(filter, (c) => heard.push(c.workflowIds[0]));
  filter.workflowIds.push('b');
  filter.workflowIds = ['b'];
  changes.dispatch(change('1', ['journal'], ['a']));
  changes.dispatch(change('2', ['journal'], ['b']));
  assert.deepEqual(heard, ['a']);
});

test('each request id is delivered once; notices without one each time', () => {
  const changes = new Changes();
  const heard = [];
  changes.subscribe(null, (c) => heard.push(c.requestId));
  for (const id of ['r1', 'r2', 'r1', null, null, 'r2', 'r3']) changes.dispatch(change(id));
  assert.deepEqual(heard, ['r1', 'r2', null, null, 'r3']);
});

/** A real store, its change feed read as a tab reads it, and what each write's notice was. */
async function feedAndNotices(name, writes) {
  const store = await openMemoryStore(name);
  const notices = [];
  for (let i = 0; i < writes; i++) {
    store.scheduleTimer(`wf${i % 3}`, `t${i}`, i);
    // What the store's worker announces: the feed's change, numbered.
    notices.push(store.changesSince(i, 1).changes[0]);
  }
  return { store, notices };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

test('numbered changes are delivered in order and once; a gap is filled from the feed first', async () => {
  const { store, notices } = await feedAndNotices('changes-gap', 8);
  assert.deepEqual(notices.map((n) => n.number), [1, 2, 3, 4, 5, 6, 7, 8]);
  let reads = 0;
  const changes = new Changes(async (after) => {
    reads++;
    return store.changesSince(after);
  });
  const heard = [];
  changes.subscribe(null, (c) => heard.push(c.number));
  await settled();
  // The subscriber starts where the feed stands: nothing from before it subscribed.
  assert.deepEqual(heard, []);
  store.scheduleTimer('wf', 'late', 1);
  const [late] = store.changesSince(8).changes;
  // Heard out of order, twice, and one notice (9 - 1 = 8 is known, so none) lost: in order, once.
  changes.dispatch(late);
  changes.dispatch(late);
  await settled();
  assert.deepEqual(heard, [9]);
  for (let i = 0; i < 4; i++) store.scheduleTimer('wf', `more${i}`, i);
  const more = store.changesSince(9).changes;
  // 10 and 11 never heard; 13, then 12 again and 12: delivered 10, 11, 12, 13 once each.
  changes.dispatch(more[3]);
  changes.dispatch(more[2]);
  changes.dispatch(more[2]);
  await changes.catchUp();
  await settled();
  assert.deepEqual(heard, [9, 10, 11, 12, 13]);
  const before = reads;
  await changes.catchUp();
  assert.equal(heard.length, 5, 'caught up: nothing again');
  assert.equal(reads, before + 1, 'one read finds nothing new');
  store.free();
});

test('a subscriber that has heard no notice yet reads what came after its floor when it may have missed some', async () => {
  const { store } = await feedAndNotices('changes-missed-first', 3);
  const changes = new Changes(async (after) => store.changesSince(after));
  const heard = [];
  changes.subscribe(null, (c) => heard.push(c.number));
  await settled();
  // Committed, and its notice lost with the leader that made it: the next leader's tab reads it.
  store.scheduleTimer('wf', 'unheard', 9);
  await changes.catchUp();
  assert.deepEqual(heard, [4]);
  store.free();
});

test('a subscriber whose first read of the feed spanned a change of leader reads back what the last one may not have announced', async () => {
  // The leader that ended committed 40 changes; the next began there and commits 28 more
  // before it answers the read.
  const { store } = await feedAndNotices('changes-straddle', 40);
  let answer;
  const changes = new Changes(async (after) => {
    if (after === Number.MAX_SAFE_INTEGER) await new Promise((resolve) => (answer = resolve));
    return store.changesSince(after);
  });
  const heard = [];
  changes.subscribe(null, (c) => heard.push(c.number));
  await settled();
  const caughtUp = changes.catchUp(40);
  for (let i = 0; i < 28; i++) store.scheduleTimer('wf', `next${i}`, i);
  answer();
  await caughtUp;
  await settled();
  // From MAX_UNANNOUNCED before where the new leader began: 9 to 68, in order, once.
  const from = 40 - MAX_UNANNOUNCED + 1;
  assert.deepEqual(heard, Array.from({ length: 68 - from + 1 }, (_, i) => from + i));
  store.free();
});

test('a tab whose feed no longer reaches back gets one reset notice, then follows on', async () => {
  const store = await openMemoryStore('changes-reset');
  const changes = new Changes(async (after) => store.changesSince(after));
  const heard = [];
  changes.subscribe({ workflowIds: ['wf-only'] }, (c) => heard.push(c));
  await settled();
  // An import replaces the store: a reader from before it cannot be told what changed.
  const other = await openMemoryStore('changes-reset-source');
  other.scheduleTimer('wf-src', 't', 1);
  store.importDatabase(other.exportDatabase());
  store.scheduleTimer('wf-only', 't', 2);
  const [after] = store.changesSince(2).changes;
  changes.dispatch(after);
  await changes.catchUp();
  await settled();
  // One reset, as of the newest change (whose own notice it stands for), and nothing else.
  assert.equal(heard.length, 1, JSON.stringify(heard));
  assert.equal(heard[0].reset, true, 'a reset reaches every filter');
  assert.equal(heard[0].number, 3);
  store.scheduleTimer('wf-only', 't2', 3);
  changes.dispatch(store.changesSince(3).changes[0]);
  assert.deepEqual(heard.map((c) => c.number), [3, 4], 'then it follows on');
  store.free();
  other.free();
});

test('a subscriber hears nothing of what committed before it subscribed; after its first notice, a new leader catches it up', async () => {
  const { store, notices } = await feedAndNotices('changes-late', 3);
  const changes = new Changes(async (after) => store.changesSince(after));
  for (const notice of notices) changes.dispatch(notice);
  const heard = [];
  changes.subscribe(null, (c) => heard.push(c.number));
  await settled();
  await changes.catchUp();
  assert.deepEqual(heard, []);
  store.scheduleTimer('wf', 'next', 9);
  changes.dispatch(store.changesSince(3).changes[0]);
  store.scheduleTimer('wf', 'then', 9);
  // Its notice lost with a leader: the next leader's tab catches up.
  await changes.catchUp();
  assert.deepEqual(heard, [4, 5]);
  store.free();
});
