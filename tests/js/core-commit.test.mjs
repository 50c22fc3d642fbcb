// `runstore/core`'s `commit` and write methods in Node (js/core.js): a call goes to the wasm as
// its arguments' JSON text with their bytes beside it (wire.js's encoder, the store's `__call`),
// and as its values when they are not plain data, for the walk to name what it refuses. What
// either way answers is what the method answers: for `commit` the step's outcome alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunStoreError } from '../../js/errors.js';
import { openMemoryStore } from './node-store.mjs';

const event = (n, data = { n }) => ({ type: 'custom', name: 'step', recordedAt: n, data });
const row = (key, input) => ({ dispatchKey: key, workflowId: 'wf', ordinal: 0, activityType: 'send', input, visibleAfter: 0 });

test('a step as text answers its outcomes, and a step sent again under its request id is a replay', async () => {
  const store = await openMemoryStore(`core-commit-${Math.random()}`);
  const step = {
    requestId: 'step-1',
    operations: [
      { op: 'append', workflowId: 'wf', events: [event(1), event(2)], expectedSeq: 0 },
      { op: 'scheduleTimer', workflowId: 'wf', timerId: 't', fireAt: 10 },
    ],
  };
  const first = store.commit(step);
  assert.deepEqual(first, { outcomes: [{ op: 'append', head: 2 }, { op: 'scheduleTimer' }], replayed: false });
  assert.deepEqual(store.commit(step), { ...first, replayed: true });
  assert.equal(store.head('wf'), 2);
  // Another step under the same id is another request: refused, nothing written.
  assert.throws(() => store.commit({ ...step, operations: [step.operations[0]] }), (error) => error instanceof RunStoreError && error.code === 'CONFLICT');
  assert.equal(store.head('wf'), 2);
  await store.close();
});

test('bytes in a step or a write method reach the store beside its text, each in its place', async () => {
  const store = await openMemoryStore(`core-commit-${Math.random()}`);
  // Views into a larger buffer and Node's Buffer (a Uint8Array of its own class) among them.
  const inputs = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array([9, 9, 4, 5, 6, 9]).subarray(2, 5), Buffer.from([7, 8])];
  store.commit({
    operations: [{
      op: 'append', workflowId: 'wf', events: [event(1, null)], expectedSeq: 0,
      outbox: inputs.map((input, i) => row(`k${i}`, input)),
    }],
  });
  assert.equal(store.insertOutbox(inputs.map((input, i) => row(`m${i}`, input))), inputs.length);
  const claimed = store.claimOutbox(1, 10).sort((a, b) => a.dispatchKey.localeCompare(b.dispatchKey));
  const expected = inputs.map((input) => [...input]);
  assert.deepEqual(claimed.map((r) => [...r.input]), [...expected, ...expected]);
  await store.close();
});

test('a step that is not plain data goes as values: the walk names the field, and nothing is written', async () => {
  const store = await openMemoryStore(`core-commit-${Math.random()}`);
  const refused = (step, field) => assert.throws(() => store.commit(step), (error) => {
    assert.ok(error instanceof RunStoreError, String(error));
    assert.equal(error.code, 'INVALID_INPUT');
    assert.equal(error.field, field);
    return true;
  });
  const append = (data) => ({ op: 'append', workflowId: 'wf', events: [event(1, data)], expectedSeq: 0 });
  refused({ operations: [append({ at: new Date(0) })] }, 'step.operations[0].events[0].data.at');
  refused({ operations: [append({ n: Number.NaN })] }, 'step.operations[0].events[0].data.n');
  refused({ operations: [append({ s: 'a\uD800' })] }, 'step.operations[0].events[0].data.s');
  assert.equal(store.head('wf'), 0);
  await store.close();
});

test('on runstore/core the workflow engines hear each commit once and in order, their own from its answer and the rest from the feed', async () => {
  const { noticesOf } = await import('../../js/workflow-notices.js');
  const store = await openMemoryStore(`core-commit-${Math.random()}`);
  const notices = noticesOf(store);
  const heard = [];
  notices.listen((change) => heard.push([change.number, change.workflowIds]));
  const append = (workflowId, requestId) => ({ requestId, operations: [{ op: 'append', workflowId, events: [event(1)], expectedSeq: 0 }] });
  await notices.commit(append('a', 'r-a'));
  assert.deepEqual(heard, [[1, ['a']]]);
  // Committed by the app itself, not through the engines: heard with the engines' next commit.
  store.commit(append('b'));
  assert.equal(heard.length, 1);
  await notices.commit(append('c'));
  assert.deepEqual(heard, [[1, ['a']], [2, ['b']], [3, ['c']]]);
  // A step sent again is a replay: nothing new to hear.
  assert.deepEqual(await notices.commit(append('a', 'r-a')), { outcomes: [{ op: 'append', head: 1 }], replayed: true });
  assert.equal(heard.length, 3);
  await store.close();
});
