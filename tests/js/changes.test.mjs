// Change notices on the page (js/changes.js): what `subscribe` refuses, and each request id
// delivered once however often it is announced (a write sent again after a hand-off is
// announced again, for the tabs that missed the first notice).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Changes } from '../../js/changes.js';
import { RunStoreError } from '../../js/errors.js';

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
