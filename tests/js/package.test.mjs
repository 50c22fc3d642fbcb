// The npm package as an app uses it: the packed tarball installed into tests/app, built with
// Vite, served on 127.0.0.1 and driven in headless Chromium. Run by scripts/test-js.sh, which
// packs, installs and builds first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serveStatic, launchChromium } from './browser.mjs';
import { METHODS, PARAMETERS } from '../../js/methods.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let server;
let browser;

before(async () => {
  server = await serveStatic(join(root, 'tests', 'app', 'dist'));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function openApp() {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(server.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
}

test('the client forwards exactly the methods the wasm class has', async () => {
  const { RunStoreCore } = await import('../../pkg/runstore.js');
  const own = Object.getOwnPropertyNames(RunStoreCore.prototype).filter(
    (name) => !['constructor', 'free', 'close'].includes(name) && !name.startsWith('__'),
  );
  assert.deepEqual([...own].sort(), [...METHODS].sort());
  for (const method of METHODS) {
    assert.equal(RunStoreCore.prototype[method].length, PARAMETERS[method].length, method);
  }
});

test('every area works on OPFS and reads back after a reload', async () => {
  const page = await openApp();
  const written = await page.evaluate(async () => {
    const { RunStore } = window.runstore;
    const store = await RunStore.open('reload-test', { persistence: 'opfs' });
    const now = 1_700_000_000_000;
    await store.append('wf-1', [
      { type: 'started', workflowType: 'order', runId: 'r1', recordedAt: now, data: { n: 1 } },
      { type: 'custom', name: 'charged', recordedAt: now + 1, data: { amount: 1999, ok: true } },
    ], 0);
    await store.compareAndSwapCheckpoint(
      { checkpointId: 'cp', runId: 'r1', revision: 0, state: { step: 1 }, updatedAt: now }, null);
    await store.compareAndSwapCheckpoint(
      { checkpointId: 'cp', runId: 'r1', revision: 1, state: { step: 2 }, updatedAt: now + 1 }, 0);
    const effect = {
      effectId: 'ef-1', capabilityId: 'email', idempotencyKey: 'welcome:1', revision: 0,
      request: { to: 'ada@example.com' }, status: { type: 'prepared' }, updatedAt: now,
    };
    await store.compareAndSwapEffect(effect, null);
    await store.compareAndSwapEffect(
      { ...effect, revision: 1, status: { type: 'completed', output: { id: 'm-1' } } }, 0);
    const rows = [1, 2, 3].map((i) => ({
      dispatchKey: `wf-1:${i}`, workflowId: 'wf-1', ordinal: i, activityType: 'send',
      input: new Uint8Array([i, 2, 3]), visibleAfter: now,
    }));
    await store.insertOutbox(rows);
    const claimed = await store.claimOutbox(now + 10, 2);
    await store.completeOutboxBatch(claimed.map((r) => r.dispatchKey));
    const bytes = new TextEncoder().encode('report body');
    const meta = await store.putArtifact(
      { scope: 'r1', mediaType: 'text/plain', name: 'report.txt', bytes, idempotencyKey: 'report' }, now);
    await store.scheduleTimer('wf-1', 'reminder', now + 60_000);
    // No close: the page reloads with the store open, as a user's tab does.
    return { claimed: claimed.map((r) => r.dispatchKey), inputIsBytes: claimed[0].input instanceof Uint8Array, meta };
  });
  assert.deepEqual(written.claimed, ['wf-1:1', 'wf-1:2']);
  assert.equal(written.inputIsBytes, true);
  assert.equal(written.meta.sizeBytes, 11);
  assert.match(written.meta.sha256, /^[0-9a-f]{64}$/);

  await page.reload();
  await page.waitForFunction(() => window.runstore !== undefined);
  const read = await page.evaluate(async (artifactId) => {
    const { RunStore } = window.runstore;
    const store = await RunStore.open('reload-test', { persistence: 'opfs' });
    const result = {
      history: await store.readHistory('wf-1'),
      summary: await store.workflowSummary('wf-1'),
      checkpoint: await store.loadCheckpoint('cp'),
      effect: await store.findEffect('email', 'welcome:1'),
      done: (await store.listOutbox('done', null, 10)).map((r) => r.dispatchKey),
      pending: (await store.listOutbox('pending', null, 10)).map((r) => [r.dispatchKey, [...r.input]]),
      artifact: await store.getArtifact('r1', artifactId),
      timers: await store.listTimers(),
    };
    result.artifactText = new TextDecoder().decode(result.artifact.bytes);
    await store.close();
    return result;
  }, written.meta.artifactId);
  assert.deepEqual(read.history.map((e) => [e.seq, e.type]), [[1, 'started'], [2, 'custom']]);
  assert.deepEqual(read.history[1].data, { amount: 1999, ok: true });
  assert.equal(read.summary.status, 'running');
  assert.equal(read.summary.head, 2);
  assert.deepEqual([read.checkpoint.revision, read.checkpoint.state], [1, { step: 2 }]);
  assert.deepEqual(read.effect.status, { type: 'completed', output: { id: 'm-1' } });
  assert.deepEqual(read.done, ['wf-1:1', 'wf-1:2']);
  assert.deepEqual(read.pending, [['wf-1:3', [3, 2, 3]]]);
  assert.equal(read.artifactText, 'report body');
  assert.deepEqual(read.timers, [{ workflowId: 'wf-1', timerId: 'reminder', fireAt: 1_700_000_060_000 }]);
  await page.close();
});

test('runstore/core works in an app\'s own worker and throws RunStoreError', async () => {
  const page = await openApp();
  const report = await page.evaluate(() => window.runCoreWorker());
  assert.equal(report.failed, undefined, report.failed);
  assert.equal(report.head, 1);
  assert.deepEqual(report.conflict, {
    isError: true, isRunStoreError: true, code: 'SEQUENCE_CONFLICT', expected: 0, actual: 1,
  });
  assert.equal(report.busy.code, 'BUSY');
  assert.equal(report.busy.isRunStoreError, true);
  assert.deepEqual(report.names, ['first']);
  await page.close();
});

test('a sequence conflict is a RunStoreError with its code and both heads', async () => {
  const page = await openApp();
  const caught = await page.evaluate(async () => {
    const { RunStore, RunStoreError } = window.runstore;
    const store = await RunStore.open('conflict-test', { persistence: 'memory' });
    const event = { type: 'custom', name: 'tick', recordedAt: 1 };
    await store.append('wf', [event, event], 0);
    try {
      await store.append('wf', [event], 1);
      return null;
    } catch (error) {
      return {
        isError: error instanceof Error,
        isRunStoreError: error instanceof RunStoreError,
        code: error.code,
        expected: error.expected,
        actual: error.actual,
        workflowId: error.workflowId,
        message: error.message,
        head: await store.head('wf'),
      };
    } finally {
      await store.close();
    }
  });
  assert.ok(caught, 'the stale append must be refused');
  assert.equal(caught.isError, true);
  assert.equal(caught.isRunStoreError, true);
  assert.equal(caught.code, 'SEQUENCE_CONFLICT');
  assert.deepEqual([caught.expected, caught.actual, caught.workflowId], [1, 2, 'wf']);
  assert.match(caught.message, /expected head 1, found 2/);
  assert.equal(caught.head, 2);
  await page.close();
});

test('bad input is INVALID_INPUT naming the field, and writes nothing', async () => {
  const page = await openApp();
  const results = await page.evaluate(async () => {
    const { RunStore } = window.runstore;
    const store = await RunStore.open('bad-input-test', { persistence: 'opfs' });
    const ok = { type: 'custom', name: 'ok', recordedAt: 1 };
    await store.append('wf', [ok], 0);
    await store.insertOutbox([{ dispatchKey: 'k0', workflowId: 'wf', ordinal: 0, activityType: 'a', input: new Uint8Array(1), visibleAfter: 0 }]);
    const row = (extra) => ({ dispatchKey: 'k1', workflowId: 'wf', ordinal: 1, activityType: 'a', input: new Uint8Array(1), visibleAfter: 0, ...extra });
    const cases = {
      'workflow id is a number': () => store.append(42, [ok], 1),
      'events is not an array': () => store.append('wf', ok, 1),
      'expected seq is NaN': () => store.append('wf', [ok], NaN),
      'expected seq is Infinity': () => store.append('wf', [ok], Infinity),
      'expected seq is negative': () => store.append('wf', [ok], -1),
      'expected seq is beyond 2^53': () => store.append('wf', [ok], 2 ** 60),
      'expected seq is fractional': () => store.append('wf', [ok], 1.5),
      'recordedAt is missing': () => store.append('wf', [{ type: 'custom', name: 'x' }], 1),
      'event type is unknown': () => store.append('wf', [{ type: 'exploded', recordedAt: 1 }], 1),
      'NaN inside the payload': () => store.append('wf', [{ ...ok, data: { x: NaN } }], 1),
      'lone surrogate in an id': () => store.append('wf\uD800', [ok], 0),
      'lone surrogate in the payload': () => store.append('wf', [{ ...ok, data: { s: 'a\uDC00' } }], 1),
      'payload above 1 MiB': () => store.append('wf', [{ ...ok, data: 'x'.repeat(1_100_000) }], 1),
      'a function cannot be sent': () => store.append('wf', [{ ...ok, data: () => 1 }], 1),
      'outbox input is a string': () => store.insertOutbox([row({ input: 'bytes' })]),
      'outbox row has an unknown field': () => store.insertOutbox([row({ priority: 1 })]),
      'an empty dispatch key': () => store.insertOutbox([row({ dispatchKey: '' })]),
      'claim limit is negative': () => store.claimOutbox(10, -5),
      'claim filter has an unknown field': () => store.claimOutbox(10, 5, { bogus: true }),
      'visibility filter has an unknown operator': () =>
        store.countVisibility({ search: [{ key: 'a', op: 'like', value: 1 }] }),
      'a Map in the payload': () => store.append('wf', [{ ...ok, data: new Map([['a', NaN]]) }], 1),
      'a Date in the payload': () => store.append('wf', [{ ...ok, data: { at: new Date(0) } }], 1),
      'an unknown field in an event': () => store.append('wf', [{ ...ok, dat: { typo: true } }], 1),
      'a __proto__ key in the payload': () => store.append('wf', [{ ...ok, data: JSON.parse('{"__proto__": {"x": 1}}') }], 1),
      'checkpoint state is cyclic': () => {
        const state = {};
        state.self = state;
        return store.compareAndSwapCheckpoint({ checkpointId: 'c', revision: 0, state, updatedAt: 0 }, null);
      },
    };
    const out = {};
    for (const [name, call] of Object.entries(cases)) {
      try {
        await call();
        out[name] = { code: 'resolved' };
      } catch (error) {
        out[name] = { code: error.code, field: error.field, message: error.message };
      }
    }
    out.after = {
      head: await store.head('wf'),
      absent: [await store.findEffect('email', 'nothing'), await store.outboxRowState('nope')],
      history: (await store.readHistory('wf')).length,
      outbox: (await store.listOutbox(null, null, 100)).map((r) => [r.dispatchKey, r.status]),
      claimed: (await store.listOutbox('claimed', null, 100)).length,
      checkpoint: await store.loadCheckpoint('c').then(() => 'exists', (e) => e.code),
      ids: await store.listWorkflowIds(),
    };
    await store.close();
    return out;
  });
  const { after: state, ...cases } = results;
  assert.equal(Object.keys(cases).length, 25);
  assert.equal(cases['an unknown field in an event'].field, 'events[0].dat');
  assert.equal(cases['a Map in the payload'].field, 'events[0].data');
  for (const [name, result] of Object.entries(cases)) {
    assert.equal(result.code, 'INVALID_INPUT', `${name}: ${JSON.stringify(result)}`);
  }
  assert.equal(cases['expected seq is NaN'].field, 'expectedSeq');
  assert.equal(cases['recordedAt is missing'].field, 'events[0]');
  assert.equal(cases['outbox row has an unknown field'].field, 'rows[0].priority');
  assert.match(cases['recordedAt is missing'].message, /recordedAt/);
  assert.equal(cases['NaN inside the payload'].field, 'events[0].data.x');
  assert.equal(cases['lone surrogate in the payload'].field, 'events[0].data.s');
  assert.equal(cases['outbox input is a string'].field.startsWith('rows[0]'), true);
  assert.deepEqual(state, {
    head: 1,
    absent: [null, null],
    history: 1,
    outbox: [['k0', 'pending']],
    claimed: 0,
    checkpoint: 'NOT_FOUND',
    ids: ['wf'],
  });
  await page.close();
});

test('a second tab gets BUSY at once, and the store after the first closes', async () => {
  const first = await openApp();
  const second = await openApp();
  await first.evaluate(async () => {
    window.held = await window.runstore.RunStore.open('busy-test', { persistence: 'opfs' });
    await window.held.append('wf', [{ type: 'custom', name: 'mine', recordedAt: 1 }], 0);
  });
  const refused = await second.evaluate(async () => {
    const started = performance.now();
    try {
      await window.runstore.RunStore.open('busy-test', { persistence: 'opfs' });
      return { code: 'opened' };
    } catch (error) {
      return { code: error.code, ms: performance.now() - started };
    }
  });
  assert.equal(refused.code, 'BUSY');
  assert.ok(refused.ms < 5000, `BUSY took ${refused.ms} ms`);
  await first.evaluate(() => window.held.close());
  const seen = await second.evaluate(async () => {
    const store = await window.runstore.RunStore.open('busy-test', { persistence: 'opfs' });
    const history = await store.readHistory('wf');
    await store.close();
    return history.map((e) => e.name);
  });
  assert.deepEqual(seen, ['mine']);
  await first.close();
  await second.close();
});

test('the README quick start runs and prints what it says', async () => {
  const page = await openApp();
  const printed = [];
  page.on('console', (message) => {
    if (message.type() === 'log') printed.push(message.text());
  });
  const expected = await page.evaluate(async () => {
    await window.runstore.readmeExample();
    return window.runstore.expectedOutput;
  });
  assert.ok(expected.length >= 3);
  assert.deepEqual(printed, expected);
  await page.close();
});

/** Opens a store, trying again while a closed tab's worker still holds the OPFS files. */
async function openRetrying(page, name) {
  return page.evaluate(async (name) => {
    const deadline = performance.now() + 10_000;
    for (;;) {
      try {
        window.store = await window.runstore.RunStore.open(name, { persistence: 'opfs' });
        return;
      } catch (error) {
        if (error.code !== 'BUSY' || performance.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }, name);
}

test('a tab closed mid-write keeps every acknowledged append, with no gap', async () => {
  const page = await openApp();
  await openRetrying(page, 'crash-test');
  // Appends one event after another; each acknowledged head is noted synchronously.
  await page.evaluate(() => {
    localStorage.setItem('acked', '0');
    (async () => {
      for (let head = 0; ; head++) {
        const event = { type: 'custom', name: 'tick', recordedAt: head, data: { head } };
        await window.store.append('wf', [event], head);
        localStorage.setItem('acked', String(head + 1));
      }
    })();
  });
  await page.waitForFunction(() => Number(localStorage.getItem('acked')) >= 40);
  await page.close(); // the tab goes away with an append in flight; its worker is terminated

  const next = await openApp();
  await openRetrying(next, 'crash-test');
  const { acked, seqs } = await next.evaluate(async () => {
    const acked = Number(localStorage.getItem('acked'));
    const seqs = (await window.store.readHistory('wf')).map((e) => e.seq);
    await window.store.close();
    return { acked, seqs };
  });
  assert.ok(acked >= 40);
  assert.ok(seqs.length >= acked, `${seqs.length} events kept, ${acked} acknowledged`);
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
  await next.close();
});
