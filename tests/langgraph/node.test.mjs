// The package in Node, installed from its packed tarball: importing it on a server never
// throws, runstore/core's init() finds its wasm by itself, and a LangGraph.js graph runs on
// RunStoreSaver (on RunStore, the store in the process), resumes after its process dies
// mid-run, and never repeats a tool call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SCRIPT, TOOL_CALLS, buildAgent, runThread } from './src/agent.js';
import { openStore } from './src/node-store.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const run = promisify(execFile);

test('importing runstore, runstore/core and runstore/langgraph in Node (no DOM) never throws', async () => {
  // A fresh process, as a server-side renderer imports the app's modules.
  const script = `
    for (const name of ['window', 'document', 'Worker']) {
      if (name in globalThis) throw new Error(name + ' exists: not a server');
    }
    const main = await import('runstore');
    const core = await import('runstore/core');
    const langgraph = await import('runstore/langgraph');
    console.log(JSON.stringify([typeof main.RunStore, typeof core.init, typeof langgraph.RunStoreSaver]));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: here });
  assert.deepEqual(JSON.parse(stdout), ['function', 'function', 'function']);
});

test("runstore/core's init() loads the package's own wasm in Node without arguments", async () => {
  const { init, RunStoreCore, RunStoreError } = await import('runstore/core');
  await init();
  const store = await RunStoreCore.open('node-init', { persistence: 'memory' });
  try {
    assert.equal(store.append('w', [{ type: 'started', workflowType: 't', runId: 'r', recordedAt: 1 }], 0), 1);
    await assert.rejects(RunStoreCore.open('node-opfs', { persistence: 'opfs' }), (error) => {
      assert.ok(error instanceof RunStoreError);
      assert.equal(error.code, 'OPFS_UNAVAILABLE');
      return true;
    });
  } finally {
    await store.close();
  }
});

test('a LangGraph.js graph runs to its end on RunStoreSaver, each tool call performed once', async () => {
  const store = await openStore('node-graph');
  try {
    const performed = [];
    const graph = buildAgent(store, { perform: (name, args, key) => (performed.push(key), { ok: name }) });
    const { resumedFrom, messages } = await runThread(graph, 'thread-1');
    assert.equal(resumedFrom, null);
    assert.equal(messages.at(-1).content, SCRIPT.at(-1).content);
    assert.deepEqual(performed.sort(), TOOL_CALLS.map(({ id }) => `thread-1/${id}`).sort());
    // Run again: LangGraph resumes from the last checkpoint, which is the end: nothing runs.
    const again = await runThread(graph, 'thread-1');
    assert.ok(again.resumedFrom);
    assert.equal(performed.length, TOOL_CALLS.length);
    const history = [];
    for await (const tuple of graph.checkpointer.list({ configurable: { thread_id: 'thread-1' } })) history.push(tuple);
    assert.ok(history.length >= 2 * SCRIPT.length, `${history.length} checkpoints`);
    for (const { id, name } of TOOL_CALLS) {
      const effect = await store.findEffect(`tool.${name}`, `thread-1/${id}`);
      assert.equal(effect?.status.type, 'completed', id);
    }
  } finally {
    await store.close();
  }
});

test('a tool call cut off after it started is not performed again: onOutcomeUnknown decides', async () => {
  const store = await openStore('node-unknown');
  try {
    let performed = 0;
    // The first performance of `book` never returns (the process "dies" there).
    const stuck = buildAgent(store, {
      perform: (name, args) => (name === 'book' ? new Promise(() => {}) : (performed += 1, { ok: name })),
    });
    const first = runThread(stuck, 'thread-2');
    for (let i = 0; i < 200 && !(await store.findEffect('tool.book', 'thread-2/call-book')); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    first.catch(() => {});
    const asked = [];
    const resumed = buildAgent(store, {
      perform: (name) => (performed += 1, { ok: name }),
      onOutcomeUnknown: (record) => (asked.push(record.idempotencyKey), { booked: 'checked by hand' }),
    });
    const { resumedFrom, messages } = await runThread(resumed, 'thread-2');
    assert.ok(resumedFrom, 'resumed from a checkpoint');
    assert.deepEqual(asked, ['thread-2/call-book']);
    assert.equal(messages.at(-1).content, SCRIPT.at(-1).content);
    // weather, convert, notify: once each; book: never performed by the resumed graph.
    assert.equal(performed, 3);
    const book = await store.findEffect('tool.book', 'thread-2/call-book');
    assert.deepEqual(book.status, { type: 'completed', output: { booked: 'checked by hand' } });
  } finally {
    await store.close();
  }
});

test('the example docs/node.md names runs (node examples/node-quickstart.mjs)', async () => {
  const example = fileURLToPath(new URL('../../examples/node-quickstart.mjs', import.meta.url));
  const child = spawn(process.execPath, [example], { cwd: here });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, output);
  assert.match(output, /already done, not sent again/);
  assert.match(output, /charged 1 time/);
});
