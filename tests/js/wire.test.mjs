// How the main-thread client captures a call when it is made (js/wire.js): a write as its
// arguments' JSON text with its bytes copied beside it, only plain data, read once, exactly
// what the store's walk would read from the same objects; anything else cloned. What the
// store then does with the text is tested through the package (package.test.mjs,
// hostile-input.test.mjs), where every write takes this path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WRITES, asValues, capture } from '../../js/wire.js';
import { WRITE_RESULTS } from '../../js/methods.js';

const EVENT = { type: 'custom', name: 'paid', recordedAt: 5, data: { b: 1, a: [0.1, 1e21, null, true, '😀 "q" \\ \n'] } };
const ROW = { dispatchKey: 'k', workflowId: 'wf', ordinal: 0, activityType: 'a', input: new Uint8Array([1, 2, 3]), visibleAfter: 0 };

test('plain data encodes as JSON.stringify would, its undefined fields and trailing arguments left out', () => {
  const message = capture('append', ['wf', [{ ...EVENT, data: { ...EVENT.data, gone: undefined } }], 0], 'req-1');
  assert.deepEqual(message, {
    method: 'append',
    requestId: 'req-1',
    text: JSON.stringify(['wf', [EVENT], 0]),
    holes: [],
    bytes: [],
  });
  assert.equal(capture('compareAndSwapCheckpoint', [{ checkpointId: 'c' }, undefined], null).text, '[{"checkpointId":"c"}]');
  // -0 reads back as 0, as the walk offers it (an integer 0) either way.
  assert.equal(capture('scheduleTimer', ['wf', 't', -0], null).text, '["wf","t",0]');
});

test('bytes travel as copies beside the text, each standing in a null counted in order', () => {
  const first = new Uint8Array([9, 8]);
  const message = capture('appendWithOutbox', ['wf', [{ ...EVENT, data: null }], 0, [ROW, { ...ROW, input: first }]], 'r');
  // The nulls in order: the event's data (0), the first row's input (1), the second's (2).
  assert.deepEqual(message.holes, [1, 2]);
  assert.deepEqual(message.bytes.map((b) => [...b]), [[1, 2, 3], [9, 8]]);
  assert.notEqual(message.bytes[1], first, 'a copy, not the caller\'s array');
  assert.deepEqual(asValues({ id: 1, ...message }).args, ['wf', [{ ...EVENT, data: null }], 0, [ROW, { ...ROW, input: first }]]);
});

test('the caller changing its arguments after the call changes nothing that travels', () => {
  const event = structuredClone(EVENT);
  const row = { ...ROW, input: new Uint8Array([1]) };
  const write = capture('appendWithOutbox', ['wf', [event], 0, [row]], 'r');
  const read = capture('readHistory', ['wf', { limit: 5 }], null);
  const args = ['wf', { limit: 5 }];
  const readArgs = capture('readHistory', args, null);
  const before = structuredClone([write, read, readArgs]);
  event.data.b = 2;
  event.name = 'changed';
  row.input[0] = 99;
  row.dispatchKey = 'other';
  args[1].limit = 50;
  assert.deepEqual([write, read, readArgs], before);
});

test('anything the text would not read back as exactly goes as cloned values', () => {
  const cyclic = {};
  cyclic.self = cyclic;
  const sparse = [EVENT];
  sparse.length = 3;
  const unfaithful = {
    Date: new Date(0),
    Float64Array: new Float64Array(2),
    DataView: new DataView(new ArrayBuffer(2)),
    Map: new Map(),
    'class instance': new (class Payload {})(),
    'inherited object': Object.create({ a: 1 }),
    NaN: NaN,
    Infinity: -Infinity,
    'lone surrogate': '\uD800',
    'cyclic object': cyclic,
    'sparse array': sparse,
    'nesting past the limit': JSON.parse('['.repeat(64) + ']'.repeat(64)),
    'a string over the limit': 'x'.repeat((1 << 20) + 1),
  };
  for (const [label, value] of Object.entries(unfaithful)) {
    const args = ['wf', [{ ...EVENT, data: { value } }], 0];
    const message = capture('append', args, 'r');
    assert.equal(message.text, undefined, label);
    assert.deepEqual(message, { method: 'append', requestId: 'r', args: structuredClone(args) }, label);
    assert.notEqual(message.args, args, label);
  }
  // An absent argument between others has no JSON form.
  assert.ok(Array.isArray(capture('claimOutbox', [1, undefined, {}], null).args));
  // A key the store refuses (it would set the prototype) or cannot read.
  for (const key of ['__proto__', '\uDC00']) {
    const data = JSON.parse(`{${JSON.stringify(key)}:1}`);
    assert.equal(capture('append', ['wf', [{ ...EVENT, data }], 0], null).text, undefined, key);
  }
  // Objects without a prototype are plain data to the walk too.
  const bare = Object.assign(Object.create(null), { a: 1 });
  assert.match(capture('append', ['wf', [{ ...EVENT, data: bare }], 0], null).text, /"data":\{"a":1\}/);
});

test('nesting is counted from each argument, as the store counts it for a method', () => {
  // 63 levels inside the event's data: events[0].data at depth 2 holds arrays to depth 64.
  const deep = JSON.parse('['.repeat(62) + ']'.repeat(62));
  assert.equal(typeof capture('append', ['wf', [{ ...EVENT, data: deep }], 0], null).text, 'string');
  const deeper = JSON.parse('['.repeat(63) + ']'.repeat(63));
  assert.equal(capture('append', ['wf', [{ ...EVENT, data: deeper }], 0], null).text, undefined);
});

test('what cannot be cloned is INVALID_INPUT naming its path, when the call is made', () => {
  const cases = [
    ['append', ['wf', [{ ...EVENT, data: { f: () => 1 } }], 0], 'events[0].data.f'],
    ['append', ['wf', [Object.defineProperty({}, 'type', { enumerable: true, get: () => { throw new Error('no'); } })], 0], 'events[0]'],
    ['head', [Symbol('s')], 'workflowId'],
  ];
  for (const [method, args, field] of cases) {
    assert.throws(() => capture(method, args, null), (error) => error.code === 'INVALID_INPUT' && error.field === field, field);
  }
});

test('each getter runs once, and the text holds what it answered', () => {
  let reads = 0;
  const data = Object.defineProperty({}, 'x', { enumerable: true, get: () => (++reads === 1 ? 1 : NaN) });
  const message = capture('append', ['wf', [{ ...EVENT, data }], 0], null);
  assert.equal(reads, 1);
  assert.match(message.text, /"data":\{"x":1\}/);
});

test('a step travels under its own request id, or the client\'s, read once with the rest', () => {
  let reads = 0;
  const step = { operations: [{ op: 'scheduleTimer', workflowId: 'wf', timerId: 't', fireAt: 1 }] };
  Object.defineProperty(step, 'requestId', { enumerable: true, get: () => (++reads === 1 ? 'own' : 'other') });
  const own = capture('commit', [step], 'client');
  assert.deepEqual([own.requestId, reads], ['own', 1]);
  assert.match(own.text, /^\[\{"operations":.*"requestId":"own"\}\]$/);
  const given = capture('commit', [{ operations: [] }], 'client');
  assert.equal(given.requestId, 'client');
  assert.equal(given.text, '[{"operations":[]}]');
  assert.equal(asValues({ id: 1, ...given }).args[0].requestId, 'client');
});

test('every write method travels as a step; reads and the import do not', () => {
  for (const method of Object.keys(WRITE_RESULTS)) assert.ok(WRITES.has(method), method);
  assert.ok(WRITES.has('commit'));
  for (const method of ['readHistory', 'head', 'requestOutcome', 'importDatabase', 'exportDatabase']) {
    assert.equal(WRITES.has(method), false, method);
  }
  const bytes = new Uint8Array([1]);
  const imported = capture('importDatabase', [bytes, undefined], 'req');
  assert.deepEqual(imported.args, [bytes, 'req']);
  assert.notEqual(imported.args[0], bytes);
  const plain = ['wf'];
  assert.equal(capture('head', plain, null).args, plain, 'primitives need no copy');
});
