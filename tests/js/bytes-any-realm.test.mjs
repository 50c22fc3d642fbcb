// Bytes from any realm, in Node. An app's tests may run under another realm's globals: vitest's
// jsdom environment puts jsdom's `Uint8Array` on Node's global, while a Buffer, a TextEncoder
// result and every structuredClone copy stay Node's own. Here the global `Uint8Array` is a vm
// context's, set before the package loads, as jsdom's is. RunStore (its store in this process)
// takes bytes of every realm as runstore/core does, answers with the global's Uint8Arrays as
// runstore/core does, and names the path of bytes it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';

const NodeUint8Array = Uint8Array;
globalThis.Uint8Array = vm.runInNewContext('Uint8Array');
const AppUint8Array = globalThis.Uint8Array;
assert.notEqual(AppUint8Array, NodeUint8Array);

// The package by its name, as an app imports it (this checkout's own, by self-reference).
const { RunStore } = await import('runstore');
const core = await import('runstore/core');
await core.init();

const SOURCES = {
  "the global Uint8Array (a vm context's)": () => new AppUint8Array([1, 2, 3]),
  "Node's own Uint8Array": () => new NodeUint8Array([1, 2, 3]),
  'a Buffer': () => Buffer.from([1, 2, 3]),
  'a TextEncoder result': () => new TextEncoder().encode('\u0001\u0002\u0003'),
};

/** The two ways to open a memory store in Node: the client and runstore/core. */
const HOSTS = {
  RunStore: (name) => RunStore.open(name, { persistence: 'memory' }),
  'runstore/core': (name) => core.RunStoreCore.open(name, { persistence: 'memory' }),
};

const row = (dispatchKey, input) => ({ dispatchKey, workflowId: 'wf', ordinal: 1, activityType: 'charge', input, visibleAfter: 0 });
const started = { type: 'started', workflowType: 'order', runId: 'r1', recordedAt: 1 };

/** Writes `bytes()` through each write that takes bytes; returns every byte array read back. */
async function writeAndReadBack(store, bytes) {
  await store.insertOutbox([row('inserted', bytes())]);
  await store.appendWithOutbox('wf', [started], 0, [row('appended', bytes())]);
  const { outcomes } = await store.commit({
    requestId: 'step-1',
    operations: [
      { op: 'insertOutbox', rows: [row('committed', bytes())] },
      { op: 'putArtifact', artifact: { scope: 'run-1', mediaType: 'application/octet-stream', bytes: bytes() }, now: 1 },
      { op: 'saveConversation', state: { conversationId: 'c1', revision: 0, formatVersion: 1, state: bytes(), updatedAt: 1 } },
    ],
  });
  const artifact = await store.getArtifact('run-1', outcomes[1].artifact.artifactId);
  const rows = await store.claimOutbox(1, 10);
  const conversation = await store.loadConversation('c1');
  return [...rows.map((claimed) => claimed.input), artifact.bytes, conversation.state];
}

for (const [host, open] of Object.entries(HOSTS)) {
  for (const [source, bytes] of Object.entries(SOURCES)) {
    test(`${host} takes ${source} and answers with the global Uint8Array`, async () => {
      const store = await open('realms');
      try {
        const answered = await writeAndReadBack(store, bytes);
        assert.equal(answered.length, 5);
        for (const value of answered) {
          assert.ok(value instanceof AppUint8Array, `${Object.prototype.toString.call(value)} not of the global's realm`);
          assert.deepEqual([...value], [1, 2, 3]);
        }
        // A whole database, as Node's bytes: the export goes back in.
        const exported = await store.exportDatabase();
        assert.ok(exported instanceof AppUint8Array);
        const { schemaVersion } = await store.importDatabase(Buffer.from(exported));
        assert.ok(schemaVersion > 0);
      } finally {
        await store.close();
      }
    });
  }

  test(`${host} refuses another realm's typed array other than Uint8Array, naming its path`, async () => {
    const store = await open('realms-refused');
    const Uint16 = vm.runInNewContext('Uint16Array');
    const refusal = (promise) => promise.then(
      () => assert.fail('accepted'),
      (error) => ({ code: error.code, field: error.field }),
    );
    try {
      const bad = () => row('bad', new Uint16([1, 2]));
      assert.deepEqual(await refusal((async () => store.insertOutbox([row('good', new AppUint8Array(1)), bad()]))()), {
        code: 'INVALID_INPUT',
        field: 'rows[1].input',
      });
      assert.deepEqual(await refusal((async () => store.appendWithOutbox('wf', [started], 0, [bad()]))()), {
        code: 'INVALID_INPUT',
        field: 'outbox[0].input',
      });
      const step = { operations: [{ op: 'append', workflowId: 'wf', expectedSeq: 0, events: [started], outbox: [bad()] }] };
      assert.deepEqual(await refusal((async () => store.commit(step))()), {
        code: 'INVALID_INPUT',
        field: 'step.operations[0].outbox[0].input',
      });
      assert.equal(await store.head('wf'), 0);
    } finally {
      await store.close();
    }
  });
}
