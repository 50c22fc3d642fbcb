// How the main-thread client encodes a write as its step's JSON text (js/wire.js): only plain
// data, read once, and exactly what the store's walk would read from the same objects. What
// the store then does with the text is tested through the package (package.test.mjs,
// hostile-input.test.mjs), where every write below takes this path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TEXT_WRITES, asArguments, callMessage, encodeOperation } from '../../js/wire.js';
import { PARAMETERS, WRITE_OPERATIONS } from '../../js/methods.js';

const EVENT = { type: 'custom', name: 'paid', recordedAt: 5, data: { b: 1, a: [0.1, 1e21, null, true, '😀 "q" \\ \n'] } };

test('plain data encodes as JSON.stringify would, its undefined fields left out as the walk leaves them', () => {
  const message = callMessage(7, 'append', ['wf', [{ ...EVENT, data: { ...EVENT.data, gone: undefined } }], 0], 'req-1');
  assert.equal(message.args, undefined);
  assert.deepEqual(JSON.parse(message.step), {
    requestId: 'req-1',
    operations: [{ op: 'append', workflowId: 'wf', events: [EVENT], expectedSeq: 0 }],
  });
  assert.equal(message.step, JSON.stringify({ requestId: 'req-1', operations: [{ op: 'append', workflowId: 'wf', events: [EVENT], expectedSeq: 0 }] }));
  // -0 reads back as 0, as the walk offers it (an integer 0) either way.
  assert.equal(encodeOperation({ op: 'x', n: -0 }).text, '{"op":"x","n":0}');
  assert.equal(JSON.parse(callMessage(1, 'append', ['wf', [EVENT], 0], null).step).requestId, null);
});

test('anything the text would not read back as exactly goes as the arguments', () => {
  const cyclic = {};
  cyclic.self = cyclic;
  const sparse = [EVENT];
  sparse.length = 3;
  const unfaithful = {
    Date: new Date(0),
    Uint8Array: new Uint8Array(2),
    Map: new Map(),
    'class instance': new (class Payload {})(),
    'inherited object': Object.create({ a: 1 }),
    NaN: NaN,
    Infinity: -Infinity,
    bigint: 10n,
    symbol: Symbol('s'),
    function: () => 1,
    'lone surrogate': '\uD800',
    'cyclic object': cyclic,
    'sparse array': sparse,
    'nesting past the limit': JSON.parse('['.repeat(70) + ']'.repeat(70)),
    'own toJSON': { toJSON: () => 'x' },
    'throwing getter': Object.defineProperty({}, 'k', { enumerable: true, get: () => { throw new Error('no'); } }),
    'revoked Proxy': (() => { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy; })(),
  };
  for (const [label, value] of Object.entries(unfaithful)) {
    const args = ['wf', [{ ...EVENT, data: { value } }], 0];
    const message = callMessage(1, 'append', args, null);
    assert.equal(message.step, undefined, label);
    assert.equal(message.args, args, label);
  }
  // A key the store refuses (it would set the prototype) or cannot read.
  for (const key of ['__proto__', '\uDC00']) {
    const data = JSON.parse(`{${JSON.stringify(key)}:1}`);
    assert.equal(callMessage(1, 'append', ['wf', [{ ...EVENT, data }], 0], null).step, undefined, key);
  }
  // Objects without a prototype are plain data to the walk too.
  const bare = Object.assign(Object.create(null), { a: 1 });
  assert.match(callMessage(1, 'append', ['wf', [{ ...EVENT, data: bare }], 0], null).step, /"data":\{"a":1\}/);
});

test('writes with bytes, plain writes, steps and reads go as arguments', () => {
  for (const method of ['insertOutbox', 'putArtifact', 'saveConversation', 'putPackage', 'deleteArtifact', 'commit', 'readHistory', 'head']) {
    assert.equal(TEXT_WRITES.has(method), false, method);
    assert.ok(callMessage(1, method, ['x'], null).args, method);
  }
});

test('each getter runs once, and the text holds what it answered', () => {
  let reads = 0;
  const data = Object.defineProperty({}, 'x', { enumerable: true, get: () => (++reads === 1 ? 1 : NaN) });
  const message = callMessage(1, 'append', ['wf', [{ ...EVENT, data }], 0], null);
  assert.equal(reads, 1);
  assert.match(message.step, /"data":\{"x":1\}/);
});

test('the light operation holds what a change notice reads: ids, an object field\'s own values, an array\'s length', () => {
  const checkpoint = { checkpointId: 'cp', runId: 'run', revision: 0, state: { big: 'x'.repeat(100) }, updatedAt: 1 };
  assert.deepEqual(callMessage(1, 'compareAndSwapCheckpoint', [checkpoint, null], null).operation, {
    op: 'compareAndSwapCheckpoint',
    checkpoint: { checkpointId: 'cp', runId: 'run', revision: 0, updatedAt: 1 },
    expectedRevision: null,
  });
  assert.deepEqual(callMessage(1, 'append', ['wf', [EVENT, EVENT], 0], null).operation, {
    op: 'append', workflowId: 'wf', events: { length: 2 }, expectedSeq: 0,
  });
});

test('a text write\'s operation fields are its parameters, as the worker reads them back after a refusal', () => {
  for (const method of TEXT_WRITES) {
    const names = PARAMETERS[method];
    const operation = WRITE_OPERATIONS[method].operation(...names);
    for (const name of names) assert.equal(operation[name], name, `${method}.${name}`);
  }
});

test('a text message turns back into its arguments for a worker that reads only those', () => {
  const args = ['wf', [EVENT], 0];
  const text = callMessage(3, 'append', args, 'req-3');
  assert.deepEqual(asArguments(text, args), { id: 3, method: 'append', args, requestId: 'req-3' });
  const plain = callMessage(4, 'head', ['wf'], null);
  assert.equal(asArguments(plain, ['wf']), plain);
});

test('an append with outbox rows goes as arguments without reading its events first', () => {
  let reads = 0;
  const event = Object.defineProperty({ ...EVENT }, 'recordedAt', { enumerable: true, get: () => ++reads });
  const row = { dispatchKey: 'k', workflowId: 'wf', ordinal: 0, activityType: 'a', input: new Uint8Array(1), visibleAfter: 0 };
  const args = ['wf', [event], 0, [row]];
  assert.equal(callMessage(1, 'appendWithOutbox', args, null).args, args);
  assert.equal(reads, 0);
  // Without rows it is plain data, and travels as text.
  assert.equal(typeof callMessage(2, 'appendWithOutbox', ['wf', [EVENT], 0, []], null).step, 'string');
});
