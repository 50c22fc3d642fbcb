// The npm package as an app uses it: the packed tarball installed into tests/app. One suite,
// two hosts: by default in headless Chromium (the app built with Vite, served on 127.0.0.1);
// with RUNSTORE_HOST=node in this process, as code on a server or an app's unit tests import
// it (tests/app/src/node.js), where the store runs in-process. The cases that need a browser
// (OPFS, tabs, workers, crashes) are skipped in Node, saying why; a case's store that lives on
// OPFS in a page lives on memory in Node, or with RUNSTORE_MEDIUM=file in a file of a fresh
// temporary directory. Run by scripts/test-js.sh, which packs, installs and builds first, and
// runs the file once per host (twice in Node: memory and file).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ENGINE, MEDIUM, useTestApp } from './browser.mjs';
import { METHODS, PARAMETERS } from '../../js/methods.js';

const IN_NODE = process.env.RUNSTORE_HOST === 'node';
if (!IN_NODE && process.env.RUNSTORE_HOST) throw new Error(`RUNSTORE_HOST is node or unset, not ${process.env.RUNSTORE_HOST}`);
const app = IN_NODE ? null : useTestApp();

/**
 * The open options of a case whose store is not about OPFS: OPFS in a page; in Node memory, or
 * with RUNSTORE_MEDIUM=file a file in a temporary directory removed after the run.
 */
const DURABLE = !IN_NODE ? { persistence: 'opfs' } : process.env.RUNSTORE_MEDIUM === 'file' ? fileStores() : { persistence: 'memory' };

function fileStores() {
  const directory = mkdtempSync(join(tmpdir(), 'runstore-package-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  return { persistence: 'file', directory };
}

/** The options of a case that needs a browser: skipped in Node, saying what it needs. */
const inBrowser = (needs) => ({ skip: IN_NODE && `needs a browser: ${needs}` });

/**
 * Runs `body(runstore, arg)` where the package runs and resolves to what it returns: in a fresh
 * page of the test app (`runstore` is its `window.runstore`, src/main.js; `arg` and the result
 * cross as JSON-like values), or in this process (src/node.js). `body` uses nothing else from
 * its scope: in a page it runs from its source text.
 */
async function inHost(body, arg) {
  if (IN_NODE) {
    const { runstore } = await import('../app/src/node.js');
    return body(runstore, arg);
  }
  const page = await openApp();
  try {
    return await page.evaluate(`(${body})(window.runstore, ${JSON.stringify(arg)})`);
  } finally {
    await page.close();
  }
}

/**
 * RUNSTORE_THROUGH=follower (run by scripts/test-js.sh): every store a test opens without
 * `exclusive` is led by another tab, so the test's calls travel from a follower to that tab's
 * worker; a memory store is opened on OPFS for it. The assertions stay the same.
 */
const THROUGH_FOLLOWER = process.env.RUNSTORE_THROUGH === 'follower';
if (THROUGH_FOLLOWER && IN_NODE) throw new Error('RUNSTORE_THROUGH=follower needs a browser, not RUNSTORE_HOST=node');
let hostTab = null;

async function openApp() {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  if (THROUGH_FOLLOWER) await openThroughFollower(page);
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
}

/** Makes `RunStore.open` in `page` (on every load) open the store as a follower of the host tab. */
async function openThroughFollower(page) {
  await page.exposeFunction('leadInHostTab', async (name) => {
    hostTab ??= await app.browser.newPage().then(async (page) => {
      await page.goto(app.url);
      await page.waitForFunction(() => window.runstore !== undefined);
      return page;
    });
    return hostTab.evaluate(async (name) => {
      window.led ??= {};
      try {
        window.led[name] ??= await window.runstore.RunStore.open(name, { persistence: 'opfs' });
      } catch {
        return 'refused'; // a name the store refuses: the test's own open says so
      }
      return window.led[name].isLeader;
    }, name);
  });
  await page.addInitScript(() => {
    let runstore;
    Object.defineProperty(window, 'runstore', {
      configurable: true,
      get: () => runstore,
      set: (value) => {
        runstore = value;
        const { RunStore } = value;
        const open = RunStore.open.bind(RunStore);
        RunStore.open = async (name, options) => {
          let shared;
          try {
            shared = options && typeof options === 'object' && !options.exclusive && { ...options, persistence: 'opfs' };
          } catch {
            shared = null; // options it cannot read: the client's own open says so
          }
          if (typeof name !== 'string' || !shared) return open(name, options);
          const led = await window.leadInHostTab(name);
          if (led === 'refused') return open(name, options);
          if (!led) throw new Error(`the host tab does not lead ${name}`);
          const store = await open(name, shared);
          if (store.isLeader) throw new Error(`${name} was opened as its leader, not as a follower`);
          return store;
        };
      },
    });
  });
}

test('the client forwards exactly the methods the store class has', async () => {
  const { RunStoreCore } = await import('../../js/core.js');
  const own = Object.getOwnPropertyNames(RunStoreCore.prototype).filter(
    (name) => !['constructor', 'free', 'close', 'flush', 'persistence'].includes(name) && !name.startsWith('__'),
  );
  assert.deepEqual([...own].sort(), [...METHODS].sort());
  for (const method of METHODS) {
    assert.equal(RunStoreCore.prototype[method].length, PARAMETERS[method].length, method);
  }
});

test('every area works on OPFS and reads back after a reload', inBrowser('OPFS, a reload'), async () => {
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
    await store.completeOutboxBatch(claimed.map((r) => ({ dispatchKey: r.dispatchKey, claimToken: r.claimToken })));
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
      history: (await store.readHistory('wf-1')).items,
      summary: await store.workflowSummary('wf-1'),
      checkpoint: await store.loadCheckpoint('cp'),
      effect: await store.findEffect('email', 'welcome:1'),
      done: (await store.listOutbox('done', { limit: 10 })).items.map((r) => r.dispatchKey),
      pending: (await store.listOutbox('pending', { limit: 10 })).items.map((r) => [r.dispatchKey, [...r.input]]),
      artifact: await store.getArtifact('r1', artifactId),
      timers: (await store.listTimers()).items,
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

test('runstore/core works in an app\'s own worker and throws RunStoreError, for a trap of its wasm too', inBrowser("an app's own worker, OPFS"), async () => {
  const page = await openApp();
  const report = await page.evaluate(() => window.runCoreWorker());
  assert.equal(report.failed, undefined, report.failed);
  assert.equal(report.head, 1);
  assert.deepEqual(report.conflict, {
    isError: true, isRunStoreError: true, code: 'SEQUENCE_CONFLICT', expected: 0, actual: 1,
  });
  assert.equal(report.busy.code, 'BUSY');
  assert.equal(report.busy.isRunStoreError, true);
  // Each engine words its trap its own way: "memory access out of bounds" (V8), "index out of
  // bounds" (SpiderMonkey), "Out of bounds memory access" (JavaScriptCore).
  const { isError, isRunStoreError, code, trapped, message } = report.trap;
  console.log(`a trap of the store's wasm: ${message}`);
  assert.deepEqual({ isError, isRunStoreError, code, trapped }, { isError: true, isRunStoreError: true, code: 'BACKEND', trapped: true });
  assert.match(message, /^the store's WebAssembly code trapped \(.*out of bounds.*\)$/i);
  // The trap wrote nothing: the store reads on.
  assert.deepEqual(report.names, ['first']);
  await page.close();
});

test('a sequence conflict is a RunStoreError with its code and both heads', async () => {
  const caught = await inHost(async ({ RunStore, RunStoreError }) => {
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
});

test('payloads come back with their keys in the order written, through the package', async () => {
  const read = await inHost(async ({ RunStore }, { options }) => {
    const store = await RunStore.open('key-order-test', options);
    // Not sorted, at every level; integer-like keys are listed first by JS whatever the order.
    const data = { zeta: 1, alpha: { y: [{ k: true, b: null }], c: 'x' }, Mid: 2.5, _: [], 1: 0 };
    const written = JSON.stringify(data);
    await store.append('wf-order', [{ type: 'custom', name: 'unsorted', recordedAt: 1, data }], 0);
    await store.compareAndSwapCheckpoint(
      { checkpointId: 'cp-order', revision: 0, state: data, updatedAt: 1 }, null);
    await store.recordRunEvent({ eventId: 'e-order', runId: 'r-order', sequence: 0, recordedAt: 1, data });
    const result = {
      written,
      event: JSON.stringify((await store.readHistory('wf-order')).items[0].data),
      checkpoint: JSON.stringify((await store.loadCheckpoint('cp-order')).state),
      runEvent: JSON.stringify((await store.readRunEvents('r-order')).items[0].data),
    };
    await store.close();
    return result;
  }, { options: DURABLE });
  assert.equal(read.written, '{"1":0,"zeta":1,"alpha":{"y":[{"k":true,"b":null}],"c":"x"},"Mid":2.5,"_":[]}');
  assert.equal(read.event, read.written);
  assert.equal(read.checkpoint, read.written);
  assert.equal(read.runEvent, read.written);
});

test('a step commits across areas in one message, exactly once under its request id', async () => {
  const result = await inHost(async ({ RunStore, RunStoreError }, { options }) => {
    const store = await RunStore.open('steps-test', options);
    const now = 1_700_000_000_000;
    const step = {
      requestId: 'wf-s/1',
      operations: [
        { op: 'append', workflowId: 'wf-s', expectedSeq: 0,
          events: [{ type: 'started', workflowType: 'order', runId: 'r1', recordedAt: now }],
          outbox: [{ dispatchKey: 'wf-s/charge', workflowId: 'wf-s', ordinal: 1, activityType: 'charge',
                     input: new Uint8Array([1]), visibleAfter: now }] },
        { op: 'scheduleTimer', workflowId: 'wf-s', timerId: 'reminder', fireAt: now + 1000 },
        { op: 'compareAndSwapCheckpoint', checkpoint: { checkpointId: 'wf-s', revision: 0, state: { at: 1 }, updatedAt: now } },
      ],
    };
    const first = await store.commit(step);
    const again = await store.commit(step);
    const recorded = await store.requestOutcome('wf-s/1');
    const neverSent = await store.requestOutcome('wf-s/never-sent');
    // The last operation conflicts: the first two must not be written.
    let failure;
    try {
      await store.commit({ operations: [
        { op: 'append', workflowId: 'wf-s', expectedSeq: 1, events: [{ type: 'custom', name: 'x', recordedAt: now }] },
        { op: 'cancelTimer', workflowId: 'wf-s', timerId: 'reminder' },
        { op: 'compareAndSwapCheckpoint', expectedRevision: 7,
          checkpoint: { checkpointId: 'wf-s', revision: 8, state: {}, updatedAt: now } },
      ] });
    } catch (error) {
      failure = { isError: error instanceof RunStoreError, code: error.code, operation: error.operation,
                  expected: error.expected, actual: error.actual };
    }
    let unknown;
    try { await store.commit({ operations: [{ op: 'dropTable' }] }); } catch (error) { unknown = error.code; }
    const after = { head: await store.head('wf-s'), timers: (await store.listTimers()).items.length };
    await store.close();
    return { first, again, recorded, neverSent, failure, unknown, after };
  }, { options: DURABLE });
  assert.deepEqual(result.first, {
    outcomes: [{ op: 'append', head: 1 }, { op: 'scheduleTimer' }, { op: 'compareAndSwapCheckpoint', revision: 0 }],
    replayed: false,
  });
  assert.deepEqual(result.again, { ...result.first, replayed: true });
  assert.equal(result.recorded.status, 'committed');
  assert.equal(result.recorded.requestId, 'wf-s/1');
  // Told apart from an id that never committed, which this log (that forgot nothing) knows.
  assert.deepEqual(result.neverSent, { status: 'notCommitted', requestId: 'wf-s/never-sent' });
  assert.deepEqual(result.recorded.outcomes, result.first.outcomes);
  assert.deepEqual(result.failure, { isError: true, code: 'CONFLICT', operation: 2, expected: 7, actual: 0 });
  assert.equal(result.unknown, 'INVALID_INPUT');
  assert.deepEqual(result.after, { head: 1, timers: 1 });
});

test('a stale claim token and a misfit lifecycle event are CONFLICTs with their fields', async () => {
  const report = await inHost(async ({ RunStore }) => {
    const store = await RunStore.open('fencing-test', { persistence: 'memory' });
    const fields = (error) => ({ code: error.code, entity: error.entity, id: error.id, expected: error.expected, actual: error.actual, event: error.event, status: error.status, message: error.message });
    const caught = async (call) => {
      try {
        await call();
        return null;
      } catch (error) {
        return fields(error);
      }
    };
    try {
      await store.insertOutbox([{ dispatchKey: 'k', workflowId: 'wf', ordinal: 0, activityType: 'a', input: new Uint8Array(1), visibleAfter: 0, maxAttempts: 3 }]);
      const [first] = await store.claimOutbox(10, 1);
      await store.rearmStaleClaims(11, 0, 10);
      const [second] = await store.claimOutbox(20, 1);
      const stale = await caught(() => store.completeOutbox('k', first.claimToken));
      const retried = await store.retryOutbox('k', second.claimToken, 3, 30);
      const row = await store.outboxRowState('k');
      await store.append('wf', [{ type: 'started', workflowType: 't', runId: 'r', recordedAt: 1 }, { type: 'completed', recordedAt: 2 }], 0);
      const lifecycle = await caught(() => store.append('wf', [{ type: 'resumed', recordedAt: 3 }], 2));
      return { tokens: [first.claimToken, second.claimToken], stale, retried, row, lifecycle, active: (await store.listActive()).items };
    } finally {
      await store.close();
    }
  });
  const [first, second] = report.tokens;
  assert.ok(second > first, `a new claim hands out a new token: ${report.tokens}`);
  assert.deepEqual(
    [report.stale.code, report.stale.entity, report.stale.id, report.stale.expected, report.stale.actual],
    ['CONFLICT', 'outbox row', 'k', first, second],
  );
  assert.equal(report.retried, 'failed');
  assert.deepEqual([report.row.status, report.row.attempt, report.row.claimToken], ['failed', 3, second]);
  assert.equal(report.row.deadReason, 'retry to attempt 3 reaches the maximum of 3');
  assert.deepEqual(
    [report.lifecycle.code, report.lifecycle.entity, report.lifecycle.id, report.lifecycle.event, report.lifecycle.status],
    ['CONFLICT', 'workflow', 'wf', 'resumed', 'completed'],
  );
  assert.match(report.lifecycle.message, /resumed does not apply to a run that is completed/);
  assert.deepEqual(report.active, []);
});

test('a write\'s change reaches subscribers with its answer; history pages read whole and in parts', async () => {
  const seen = await inHost(async ({ RunStore }) => {
    const store = await RunStore.open('answers-test', { persistence: 'memory' });
    const order = [];
    const changes = [];
    store.subscribe({ workflowIds: ['wf'] }, (change) => {
      order.push(`change ${change.heads.wf}`);
      changes.push(change);
    });
    const event = (n) => ({ type: 'custom', name: `e${n}`, recordedAt: n, data: { n, text: 'é\u2028"' } });
    await store.append('wf', [event(1), event(2)], 0);
    order.push('answered');
    await store.append('wf', [event(3)], 2);
    order.push('answered');
    const conflict = await store.append('wf', [event(9)], 0).catch((e) => e.code);
    await store.append('other', [event(1)], 0);
    const codes = async (call) => call().then(() => 'resolved', (e) => `${e.code} ${e.field}`);
    const read = {
      all: await store.readHistory('wf'),
      first: await store.readHistory('wf', { limit: 2 }),
      from: await store.readHistoryFrom('wf', 2),
      none: await store.readHistory('nobody'),
      badId: await codes(() => store.readHistory(42)),
      badFrom: await codes(() => store.readHistoryFrom('wf', -1)),
      badLimit: await codes(() => store.readHistory('wf', { limit: 0 })),
    };
    read.rest = await store.readHistory('wf', { limit: 2, cursor: read.first.nextCursor });
    // Give a shared store's change notices (other tabs', through a channel) time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await store.close();
    return { order, changes, conflict, read };
  });
  if (!THROUGH_FOLLOWER) assert.deepEqual(seen.order, ['change 2', 'answered', 'change 3', 'answered']);
  assert.deepEqual(seen.changes.map((c) => [c.areas, c.workflowIds, c.heads]), [
    [['journal'], ['wf'], { wf: 2 }],
    [['journal'], ['wf'], { wf: 3 }],
  ]);
  // A shared store's writes travel under request ids the client makes (a follower's calls are
  // sent again after a hand-off); a private store's go as given, as on runstore/core.
  if (THROUGH_FOLLOWER) assert.equal(typeof seen.changes[0].requestId, 'string');
  else assert.equal(seen.changes[0].requestId, null);
  assert.equal(seen.conflict, 'SEQUENCE_CONFLICT');
  const { all, first, rest, from, none, badId, badFrom, badLimit } = seen.read;
  assert.deepEqual(all.items.map((e) => [e.seq, e.name, e.recordedAt, e.data]), [
    [1, 'e1', 1, { n: 1, text: 'é\u2028"' }],
    [2, 'e2', 2, { n: 2, text: 'é\u2028"' }],
    [3, 'e3', 3, { n: 3, text: 'é\u2028"' }],
  ]);
  assert.equal(all.nextCursor, null);
  assert.deepEqual(first.items.map((e) => e.seq), [1, 2]);
  assert.equal(typeof first.nextCursor, 'string');
  assert.deepEqual(rest, { items: [all.items[2]], nextCursor: null });
  assert.deepEqual(from.items.map((e) => e.seq), [2, 3]);
  assert.deepEqual(none, { items: [], nextCursor: null });
  assert.equal(badId, 'INVALID_INPUT workflowId');
  assert.equal(badFrom, 'INVALID_INPUT fromSeq');
  assert.match(badLimit, /^INVALID_INPUT page/);
});

test('a plain-data write crosses as its arguments\' JSON text and reads back as written', async () => {
  const result = await inHost(async ({ RunStore }, { options, watch }) => {
    // What leaves the page for the store's worker (or, from a follower, for the leader's). In
    // Node the store runs in the process, and nothing leaves it.
    const sent = [];
    for (const Target of watch ? [Worker, BroadcastChannel] : []) {
      const post = Target.prototype.postMessage;
      Target.prototype.postMessage = function (message, ...rest) {
        for (const call of [message, ...(message?.batch ?? []), ...(message?.calls ?? [])]) {
          if (call?.method) sent.push({ method: call.method, text: typeof call.text === 'string', args: Array.isArray(call.args) });
        }
        return post.call(this, message, ...rest);
      };
    }
    const store = await RunStore.open('wire-text-test', options);
    // Through a follower, a call that rides on the request for the link goes as arguments (the
    // leader's worker has not said yet that it reads text): a read first sets the link up.
    await store.head('wf-wire');
    const data = { z: [0.1, -0, 1e21, 2 ** 53 - 1, null, true], s: 'é 😀 "q" \\ \n', nested: { a: { b: {} } }, gone: undefined };
    const event = { type: 'custom', name: 'plain', recordedAt: 7, data };
    const head = await store.append('wf-wire', [event, { ...event, name: 'second' }], 0);
    let dateError = null;
    await store.append('wf-wire', [{ ...event, data: { at: new Date(0) } }], head).catch((error) => {
      dateError = { code: error.code, field: error.field };
    });
    let seqError = null;
    await store.append('wf-wire', [event], 99).catch((error) => {
      seqError = { code: error.code, expected: error.expected, actual: error.actual };
    });
    const history = await store.readHistory('wf-wire');
    await store.close();
    return { head, sent, dateError, seqError, history };
  }, { options: DURABLE, watch: !IN_NODE });
  if (!IN_NODE) {
    assert.deepEqual(result.sent.filter((call) => call.method === 'append'), [
      { method: 'append', text: true, args: false },
      { method: 'append', text: false, args: true },
      { method: 'append', text: true, args: false },
    ]);
  }
  assert.equal(result.head, 2);
  assert.deepEqual(result.dateError, { code: 'INVALID_INPUT', field: 'events[0].data.at' });
  assert.deepEqual(result.seqError, { code: 'SEQUENCE_CONFLICT', expected: 99, actual: 2 });
  const data = { z: [0.1, 0, 1e21, 2 ** 53 - 1, null, true], s: 'é 😀 "q" \\ \n', nested: { a: { b: {} } } };
  assert.deepEqual(result.history.items, [
    { seq: 1, type: 'custom', name: 'plain', recordedAt: 7, data },
    { seq: 2, type: 'custom', name: 'second', recordedAt: 7, data },
  ]);
});

test('a follower whose leader does not say it reads text sends its writes as arguments', { skip: !THROUGH_FOLLOWER && 'runs through a follower tab only (RUNSTORE_THROUGH=follower)' }, async () => {
  const page = await openApp();
  const result = await page.evaluate(async () => {
    // The leader's link answer as a leader running an older package gives it: no `text`.
    const data = Object.getOwnPropertyDescriptor(MessageEvent.prototype, 'data');
    Object.defineProperty(MessageEvent.prototype, 'data', {
      configurable: true,
      get() {
        const value = data.get.call(this);
        if (!value?.linked) return value;
        const { protocol, ...older } = value;
        return older;
      },
    });
    const sent = [];
    const post = BroadcastChannel.prototype.postMessage;
    BroadcastChannel.prototype.postMessage = function (message, ...rest) {
      for (const call of [message, ...(message?.batch ?? []), ...(message?.calls ?? [])]) {
        if (call?.method === 'append') sent.push(typeof call.text === 'string' ? 'text' : 'arguments');
      }
      return post.call(this, message, ...rest);
    };
    const { RunStore } = window.runstore;
    const store = await RunStore.open('wire-older-leader-test', { persistence: 'opfs' });
    await store.head('wf');
    const event = { type: 'custom', name: 'x', recordedAt: 1, data: { n: 1 } };
    const heads = [await store.append('wf', [event], 0), await store.append('wf', [event], 1)];
    const items = (await store.readHistory('wf')).items.length;
    await store.close();
    return { sent, heads, items };
  });
  assert.deepEqual(result, { sent: ['arguments', 'arguments'], heads: [1, 2], items: 2 });
  await page.close();
});

test('a call is captured when it is made, and settles in a later task', async () => {
  const got = await inHost(async ({ RunStore }, { options }) => {
    const store = await RunStore.open('capture-test', options);
    const heard = [];
    store.subscribe(null, (change) => heard.push(change.heads));
    const data = { n: 1, list: [1] };
    const events = [{ type: 'custom', name: 'first', recordedAt: 1, data }];
    let settled = false;
    const appended = store.append('wf', events, 0).then((head) => {
      settled = true;
      return head;
    });
    // A read made in the same task (it leaves with the append), then a write: each changed
    // right after the call, none of it reaches the store.
    const page = { limit: 1 };
    const sameTask = store.readHistory('wf', page);
    const checkpoint = { checkpointId: 'c', revision: 0, state: { step: 1 }, updatedAt: 1 };
    const swapped = store.compareAndSwapCheckpoint(checkpoint, null);
    events[0].name = 'changed';
    data.n = 2;
    data.list.push(2);
    events.push({ type: 'custom', name: 'pushed', recordedAt: 2 });
    page.limit = 0; // INVALID_INPUT, had it been read now
    checkpoint.state.step = 99;
    const atOnce = { settled, heard: heard.length };
    await swapped;
    // A read that is the first call of its task, changed after the call.
    const laterPage = { limit: 1 };
    const firstOfTask = store.readHistory('wf', laterPage);
    laterPage.limit = 0;
    const result = {
      atOnce,
      head: await appended,
      sameTask: await sameTask,
      firstOfTask: await firstOfTask,
      state: (await store.loadCheckpoint('c')).state,
      heard,
    };
    // Notices travel on their own channel, and an answer may overtake one: wait for the two
    // writes' notices (up to 2 s), not only for their answers.
    for (let waited = 0; heard.length < 2 && waited < 2000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    await store.close();
    return result;
  }, { options: DURABLE });
  assert.deepEqual(got.atOnce, { settled: false, heard: 0 });
  assert.equal(got.head, 1);
  const written = [{ seq: 1, type: 'custom', name: 'first', recordedAt: 1, data: { n: 1, list: [1] } }];
  assert.deepEqual(got.sameTask, { items: written, nextCursor: null });
  assert.deepEqual(got.firstOfTask, { items: written, nextCursor: null });
  assert.deepEqual(got.state, { step: 1 });
  assert.deepEqual(got.heard, [{ wf: 1 }, {}]);
});

test('a private store answers every call made in one task, not only the first', async () => {
  // The calls after a task's first leave together, each copied when made (js/batch.js).
  const got = await inHost(async ({ RunStore }) => {
    const store = await RunStore.open('same-task', { persistence: 'memory' });
    await store.append('wf', [{ type: 'custom', name: 'a', recordedAt: 1 }], 0);
    const answers = await Promise.all([store.head('wf'), store.countVisibility({}), store.listTimers()]).catch((error) => error.message);
    await store.close();
    return answers;
  });
  assert.deepEqual(got, [1, 0, { items: [], nextCursor: null }]);
});

test('bad input is INVALID_INPUT naming the field, and writes nothing', async () => {
  const results = await inHost(async ({ RunStore }, { options }) => {
    const store = await RunStore.open('bad-input-test', options);
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
      history: (await store.readHistory('wf')).items.length,
      outbox: (await store.listOutbox(null, { limit: 100 })).items.map((r) => [r.dispatchKey, r.status]),
      claimed: (await store.listOutbox('claimed', { limit: 100 })).items.length,
      checkpoint: await store.loadCheckpoint('c').then(() => 'exists', (e) => e.code),
      ids: (await store.listWorkflowIds()).items,
    };
    await store.close();
    return out;
  }, { options: DURABLE });
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
});

test('the client accepts and refuses exactly what runstore/core does, naming the same fields', async () => {
  const { core, client } = await inHost((runstore) => runstore.runParity('parity-test', { persistence: 'memory' }));
  assert.equal(core.failed, undefined, core.failed);
  assert.deepEqual(client, core.outcomes);
  const outcomes = new Set(core.outcomes.map(([, outcome]) => outcome));
  assert.ok(outcomes.has('resolved') && [...outcomes].some((o) => o.startsWith('INVALID_INPUT ')), [...outcomes].join(', '));
  assert.ok(!core.outcomes.some(([, outcome]) => outcome.startsWith('plain')), 'every refusal is a RunStoreError');
});

test('open refuses what the store refuses: a name that is not a string, options it cannot read', async () => {
  const got = await inHost(async ({ RunStore }) => {
    const outcome = (promise) =>
      promise.then(
        async (store) => {
          await store.close();
          return 'opened';
        },
        (error) => `${error.name} ${error.code} ${error.field}`,
      );
    const throwing = Object.defineProperty({ persistence: 'opfs' }, 'durability', { enumerable: true, get: () => { throw new Error('getter'); } });
    const result = {
      names: [],
      throwingOptions: await outcome(RunStore.open('open-checks', throwing)),
      revokedOptions: await outcome(RunStore.open('open-checks', (() => { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy; })())),
      unknownOption: await outcome(RunStore.open('open-checks', { persistence: 'opfs', junk: 1 })),
      badName: await outcome(RunStore.open('.hidden', { persistence: 'opfs' })),
      symbolName: await outcome(RunStore.open(Symbol('s'), { persistence: 'opfs' })),
    };
    for (const name of [42, null, undefined, new String('boxed')]) result.names.push(await outcome(RunStore.open(name, { persistence: 'opfs' })));
    // Where a store would have been created: an OPFS directory, or (where OPFS is missing, or
    // the run's medium is IndexedDB) an IndexedDB database `runstore:<name>`. Node has neither.
    result.directories = [];
    const root = await globalThis.navigator?.storage?.getDirectory().catch(() => null);
    for await (const [entry] of root?.entries() ?? []) result.directories.push(entry);
    for (const { name } of (await globalThis.indexedDB?.databases?.()) ?? []) result.directories.push(name.replace(/^runstore:/, ''));
    return result;
  });
  assert.deepEqual(got.names, Array(4).fill('RunStoreError INVALID_INPUT name'));
  assert.equal(got.throwingOptions, 'RunStoreError INVALID_INPUT options');
  assert.equal(got.revokedOptions, 'RunStoreError INVALID_INPUT options');
  assert.equal(got.unknownOption, 'RunStoreError INVALID_INPUT options.junk');
  assert.equal(got.badName, 'RunStoreError INVALID_INPUT name');
  assert.equal(got.symbolName, 'RunStoreError INVALID_INPUT name');
  for (const name of ['42', 'null', 'undefined', 'boxed']) assert.ok(!got.directories.includes(name), `${name} in ${got.directories}`);
});

test('a store in a file is refused in a browser, naming the media a browser has, and creates nothing', inBrowser('the file medium is for Node'), async () => {
  const got = await inHost(async ({ openAsGiven }) => {
    const refusals = [];
    for (const options of [{ persistence: 'file', directory: 'stores' }, { directory: 'stores' }]) {
      // As given: not moved to the run's medium or to a follower tab.
      refusals.push(await openAsGiven('file-in-browser', options).then(
        async (store) => (await store.close(), 'opened'),
        (error) => ({ code: error.code, field: error.field, message: error.message }),
      ));
    }
    const root = await globalThis.navigator?.storage?.getDirectory().catch(() => null);
    const created = [];
    for await (const [entry] of root?.entries() ?? []) created.push(entry);
    for (const { name } of (await globalThis.indexedDB?.databases?.()) ?? []) created.push(name);
    return { refusals, created: created.filter((name) => name.includes('file-in-browser')) };
  });
  for (const refusal of got.refusals) {
    assert.equal(refusal.code, 'INVALID_INPUT', JSON.stringify(refusal));
    assert.equal(refusal.field, 'options.persistence', JSON.stringify(refusal));
    for (const medium of ["'opfs'", "'indexeddb'", "'memory'", 'Node']) assert.ok(refusal.message.includes(medium), `${medium} not in: ${refusal.message}`);
  }
  assert.deepEqual(got.created, []);
});

test('an exclusive store: a second tab gets BUSY at once, and the store after the first closes', inBrowser('tabs, OPFS'), async () => {
  const first = await openApp();
  const second = await openApp();
  await first.evaluate(async () => {
    window.held = await window.runstore.RunStore.open('busy-test', { persistence: 'opfs', exclusive: true });
    await window.held.append('wf', [{ type: 'custom', name: 'mine', recordedAt: 1 }], 0);
  });
  const refused = await second.evaluate(async () => {
    const started = performance.now();
    try {
      await window.runstore.RunStore.open('busy-test', { persistence: 'opfs', exclusive: true });
      return { code: 'opened' };
    } catch (error) {
      return { code: error.code, ms: performance.now() - started };
    }
  });
  assert.equal(refused.code, 'BUSY');
  assert.ok(refused.ms < 5000, `BUSY took ${refused.ms} ms`);
  await first.evaluate(() => window.held.close());
  const seen = await second.evaluate(async () => {
    const store = await window.runstore.RunStore.open('busy-test', { persistence: 'opfs', exclusive: true });
    const history = await store.readHistory('wf');
    await store.close();
    return history.items.map((e) => e.name);
  });
  assert.deepEqual(seen, ['mine']);
  await first.close();
  await second.close();
});

test("a store's new OPFS pool holds four slots and no lock file, and keeps them when it opens again", { skip: (IN_NODE || MEDIUM !== 'opfs') && 'an OPFS pool (the page on OPFS)' }, async () => {
  // Each file is a round trip to the browser's storage process before the store opens: the
  // store's file, its WAL, and the encrypted copy and its journal that rekey makes are all it
  // needs (tests/js/cipher.test.mjs encrypts in place on them). The pool's Web Lock keeps
  // other openers out, without a lock file.
  const page = await openApp();
  const seen = await page.evaluate(async () => {
    const name = 'pool-layout';
    const layout = async () => {
      const pool = await (await navigator.storage.getDirectory()).getDirectoryHandle(name);
      const entries = [];
      for await (const [entry, handle] of pool.entries()) entries.push(`${entry} (${handle.kind})`);
      const slots = [];
      for await (const [, handle] of (await pool.getDirectoryHandle('.opaque')).entries()) slots.push(handle.kind);
      return { entries: entries.sort(), slots };
    };
    const store = await window.runstore.RunStore.open(name, { persistence: 'opfs', exclusive: true });
    await store.append('wf', [{ type: 'custom', name: 'kept', recordedAt: 1 }], 0);
    const opened = await layout();
    await store.close();
    const again = await window.runstore.RunStore.open(name, { persistence: 'opfs', exclusive: true });
    const history = await again.readHistory('wf');
    const reopened = await layout();
    await again.close();
    return { opened, reopened, names: history.items.map((event) => event.name) };
  });
  const expected = { entries: ['.opaque (directory)'], slots: ['file', 'file', 'file', 'file'] };
  assert.deepEqual(seen.opened, expected);
  assert.deepEqual(seen.reopened, expected);
  assert.deepEqual(seen.names, ['kept']);
  await page.close();
});

test('the README quick start and the tour of the store (docs/browser-apps.md) run and print what they say', inBrowser("OPFS (the quick start's store)"), async () => {
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

/** The options of a case about Node itself: skipped in a browser. */
const inNode = { skip: !IN_NODE && 'about Node: runs with RUNSTORE_HOST=node' };

test('in Node: OPFS and IndexedDB are OPFS_UNAVAILABLE, saying what was asked and what Node has; an open without options a store or a coded error', inNode, async () => {
  const { runstore } = await import('../app/src/node.js');
  const { RunStore, RunStoreError, ErrorCode, storageEstimate, requestPersistence } = runstore;
  const outcome = (promise) => promise.then((value) => value, (error) => error);
  const node = `Node.js ${process.version}`;
  const media = { opfs: 'OPFS sync access handles', indexeddb: 'IndexedDB (indexedDB)' };
  for (const [persistence, needs] of Object.entries(media)) {
    for (const options of [{ persistence }, { persistence, exclusive: true }]) {
      const error = await outcome(RunStore.open('node-persistent', options));
      assert.ok(error instanceof RunStoreError, `${JSON.stringify(options)}: ${error}`);
      assert.equal(error.code, 'OPFS_UNAVAILABLE');
      // What was asked, what it needs, that this runtime lacks it, and what a store here takes.
      for (const fact of [`persistence '${persistence}' needs ${needs}`, node, "persistence 'memory'"]) {
        assert.ok(error.message.includes(fact), `${JSON.stringify(options)}: "${fact}" not in: ${error.message}`);
      }
      assert.doesNotMatch(error.message, persistence === 'opfs' ? /Web Locks|IndexedDB/ : /OPFS|Web Locks/);
    }
  }
  for (const [call, asks] of [[storageEstimate, 'navigator.storage.estimate()'], [requestPersistence, 'navigator.storage.persist()']]) {
    const error = await outcome(call());
    assert.ok(error instanceof RunStoreError && error.code === 'OPFS_UNAVAILABLE', `${call.name}: ${error}`);
    for (const fact of [`${call.name}()`, asks, node, 'memory']) {
      assert.ok(error.message.includes(fact), `${call.name}: "${fact}" not in: ${error.message}`);
    }
    assert.doesNotMatch(error.message, /worker/i);
  }
  // A store's name works wherever it runs: 'auto' (which takes memory here) refuses what OPFS
  // and IndexedDB would, and says why.
  const named = await outcome(RunStore.open('my app'));
  assert.equal(named.code, 'INVALID_INPUT');
  assert.equal(named.field, 'name');
  assert.match(named.message, /store name "my app" must be .*persistence 'auto'.*'memory' takes any name/);
  // Whatever RunStore.open does without a medium, it is a working store or a coded error.
  for (const options of [undefined, {}]) {
    const opened = await outcome(RunStore.open('node-default', options));
    if (opened instanceof Error) {
      assert.ok(opened instanceof RunStoreError && opened.code in ErrorCode, `${JSON.stringify(options)}: ${opened}`);
      continue;
    }
    assert.equal(await opened.append('wf', [{ type: 'custom', name: 'x', recordedAt: 1 }], 0), 1);
    await opened.close();
  }
});

test('in Node: a process that leaves its store open ends once its calls are answered', inNode, async () => {
  // A fresh process, as a script or a server starts: no DOM, the package by its name.
  const script = `
    for (const name of ['window', 'document', 'Worker']) {
      if (name in globalThis) throw new Error(name + ' exists: not Node as a server runs it');
    }
    const { RunStore } = await import('runstore');
    const store = await RunStore.open('left-open', { persistence: 'memory' });
    store.subscribe(null, (change) => console.log('changed', JSON.stringify(change.heads)));
    store.append('wf', [{ type: 'custom', name: 'x', recordedAt: 1 }], 0).then((head) => console.log('answered', head));
  `;
  const appDir = fileURLToPath(new URL('../app/', import.meta.url));
  // An open store that held the process would end this test by its timeout.
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: appDir, timeout: 60_000 });
  assert.deepEqual(stdout.trim().split('\n'), ['changed {"wf":1}', 'answered 1']);
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

test('a tab closed mid-write keeps every acknowledged append, with no gap', inBrowser('a tab closed mid-write, OPFS'), async () => {
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
    const seqs = (await window.store.readHistory('wf')).items.map((e) => e.seq);
    await window.store.close();
    return { acked, seqs };
  });
  assert.ok(acked >= 40);
  assert.ok(seqs.length >= acked, `${seqs.length} events kept, ${acked} acknowledged`);
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
  await next.close();
});

test('persistence: auto takes what the engine has and says so, in every tab; opfs is refused where OPFS is missing', inBrowser('tabs, OPFS, IndexedDB'), async () => {
  const [first, second] = [await openApp(), await openApp()];
  const opened = await first.evaluate(async () => {
    const { openAsGiven } = window.runstore;
    const out = {};
    for (const persistence of ['opfs', 'indexeddb', 'memory']) {
      try {
        const store = await openAsGiven(`persistence-${persistence}`, { persistence, exclusive: true });
        out[persistence] = store.persistence;
        await store.close();
      } catch (error) {
        out[persistence] = error.code;
      }
    }
    window.auto = await openAsGiven('persistence-auto');
    await window.auto.append('wf', [{ type: 'custom', name: 'here', recordedAt: 1 }], 0);
    out.auto = window.auto.persistence;
    return out;
  });
  const seen = await second.evaluate(async () => {
    const store = await window.runstore.openAsGiven('persistence-auto');
    const names = (await store.readHistory('wf')).items.map((event) => event.name);
    return { persistence: store.persistence, isLeader: store.isLeader, names };
  });
  const hasOpfs = ENGINE !== 'webkit';
  assert.deepEqual(opened, {
    opfs: hasOpfs ? 'opfs' : 'OPFS_UNAVAILABLE',
    indexeddb: 'indexeddb',
    memory: 'memory',
    auto: hasOpfs ? 'opfs' : 'indexeddb',
  });
  // The second tab is served by the first, and hears from it where the store lives.
  assert.deepEqual(seen, { persistence: opened.auto, isLeader: false, names: ['here'] });
  await first.close();
  await second.close();
});

if (THROUGH_FOLLOWER) {
  test('through a follower: the host tab led every shared store the tests opened', async () => {
    const led = await hostTab.evaluate(() => Object.entries(window.led).map(([name, store]) => [name, store.isLeader]));
    const names = led.map(([name]) => name);
    for (const name of ['reload-test', 'conflict-test', 'steps-test', 'fencing-test', 'bad-input-test', 'crash-test']) {
      assert.ok(names.includes(name), `${name} was not led by the host tab: ${names}`);
    }
    assert.ok(led.every(([, isLeader]) => isLeader), JSON.stringify(led));
  });
}
