// The engine's semantics, case by case, run where the package runs: in a page of the test app
// (on the page's client, with the store on OPFS or IndexedDB) and in Node (on memory). Each
// case drives real workflows on a real store and reports what it saw as plain data; the test
// (tests/js/workflow.test.mjs) asserts on it. "The engine stopped" is an engine stopped in the
// middle of a run and another started on the same store, as when a leader tab goes and the
// next takes over (the real thing, tabs closed and crashed, is in the chaos run).
import { RunStore } from 'runstore';
import { init, RunStoreCore } from 'runstore/core';
import { defineWorkflow, FatalError, WorkflowEngine } from 'runstore/workflow';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check()` is truthy (polled); resolves to its value. */
async function until(check, what, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Waits until the run waits on `what` (`sleep`, `wait`, `step`, `child`). */
const waitingOn = (engine, id, what) =>
  until(async () => (await engine.describe(id)).waiting?.startsWith(what), `${id} to wait on ${what}`);

/** An error as data. */
const errorOf = (error) => ({
  code: error?.code ?? null,
  name: error?.name ?? null,
  message: String(error?.message ?? error),
  cause: error?.cause ? { name: error.cause.name, message: error.cause.message, code: error.cause.code ?? null } : null,
  isError: error instanceof Error,
});

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return errorOf(error);
  }
  return null;
}

/** The run's events as `[type or name, data]`. */
async function history(store, id) {
  return (await store.readHistory(id, { limit: 10_000 })).items.map((e) => ({ seq: e.seq, kind: e.type === 'custom' ? e.name : e.type, data: e.data, at: e.recordedAt }));
}

/** Timer events that fired before their time (none, if the engine keeps its word). */
function earlyTimers(events) {
  const sleeps = new Map(events.filter((e) => e.kind === 'sleep').map((e) => [e.data.n, e.data.fireAt]));
  return events.filter((e) => e.kind === 'timerFired' && e.at < sleeps.get(e.data.n));
}

const quiet = () => {};

export const CASES = {
  /** A recorded step is not run again when the run replays. */
  async stepsRecordedOnce(open) {
    const store = await open('wf-steps');
    const calls = { a: 0, b: 0 };
    const flow = defineWorkflow('flow', async (ctx, input) => {
      const a = await ctx.step('a', () => ++calls.a + input);
      await ctx.sleep('pause', 150);
      const b = await ctx.step('b', () => ++calls.b * 10);
      return { a, b };
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    await engine.start(flow, { id: 'f1', input: 1 });
    await waitingOn(engine, 'f1', 'sleep');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('f1');
    const events = await history(store, 'f1');
    await engine.stop();
    return { result, calls, kinds: events.map((e) => e.kind), early: earlyTimers(events) };
  },

  /** A body cut off by its engine's end runs again with the same key and the next attempt. */
  async cutOffBodyRunsAgain(open) {
    const store = await open('wf-cut');
    const seen = [];
    let release = null;
    const flow = defineWorkflow('charge', async (ctx) =>
      ctx.step('charge', ({ idempotencyKey, attempt }) => {
        seen.push({ idempotencyKey, attempt });
        if (attempt === 1) return new Promise((resolve) => (release = resolve)); // still running when the engine stops
        return { charged: true, attempt };
      }),
    );
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    await engine.start(flow, { id: 'c1' });
    await until(() => seen.length === 1, 'the first attempt');
    await engine.stop();
    release({ charged: 'late' }); // the cut-off attempt ends after its engine: not recorded
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('c1');
    const effect = await store.loadEffect(seen[0].idempotencyKey);
    const attempt = (await history(store, 'c1')).find((e) => e.kind === 'stepAttempt').data;
    await engine.stop();
    return { result, seen, effect: { status: effect.status, attempt: effect.request.attempt }, attempt };
  },

  /** A body cut off during its last allowed attempt is not run again: the step fails with its attempts spent. */
  async cutOffLastAttemptFails(open) {
    const store = await open('wf-cut-last');
    const seen = [];
    const flow = defineWorkflow('notify', async (ctx) => {
      try {
        return await ctx.step('notify', ({ attempt, idempotencyKey }) => {
          seen.push({ attempt, idempotencyKey });
          if (attempt === 1) throw new Error('pager down');
          return new Promise(() => {}); // attempt 2, the last, is still running when the engine stops
        }, { retry: { maxAttempts: 2, initialIntervalMs: 10 } });
      } catch (error) {
        return { ...errorOf(error), attempts: error.attempts };
      }
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    await engine.start(flow, { id: 'n1' });
    await until(() => seen.length === 2, 'the second attempt');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('n1');
    await sleep(50); // time for a third attempt, if one were started
    const events = await history(store, 'n1');
    const effect = await store.loadEffect(seen[0].idempotencyKey);
    await engine.stop();
    const stepFailed = events.find((e) => e.kind === 'stepFailed')?.data ?? null;
    return { result, attempts: seen.map((s) => s.attempt), kinds: events.map((e) => e.kind), stepFailed, effect: { status: effect.status.type, attempt: effect.request.attempt } };
  },

  /** A `once` step cut off by its engine's end is OUTCOME_UNKNOWN, never run again. */
  async onceStepOutcomeUnknown(open) {
    const store = await open('wf-once');
    let calls = 0;
    const flow = defineWorkflow('pay', async (ctx) => {
      try {
        await ctx.step('pay', () => {
          calls++;
          return new Promise(() => {}); // the engine stops during it
        }, { once: true });
        return 'paid';
      } catch (error) {
        return { code: error.code, step: error.step, idempotencyKey: error.idempotencyKey };
      }
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const handle = await engine.start(flow, { id: 'p1' });
    await until(() => calls === 1, 'the body');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await handle.result().catch(errorOf);
    const result2 = await engine.result('p1');
    const unresolved = (await store.listUnresolvedEffects({ limit: 10 })).items.map((e) => [e.status.type, e.idempotencyKey]);
    await engine.stop();
    return { result: result2, calls, unresolved, handleResult: result };
  },

  /** A step whose start lands after its engine stopped (its tab no longer leads) runs in the next engine only. */
  async landsAfterStop(open) {
    const store = await open('wf-late');
    const attempts = [];
    const flow = defineWorkflow('late', async (ctx) => ctx.step('call', ({ attempt }) => attempts.push(attempt)));
    // The store as the first engine sees it: its commits after the first wait for `release`.
    let release;
    const gate = new Promise((resolve) => (release = resolve));
    let commits = 0;
    const held = [];
    const gated = new Proxy(store, {
      get(target, key) {
        if (key === 'commit') {
          return (step) => {
            if (++commits === 1) return target.commit(step);
            const landed = gate.then(() => target.commit(step));
            held.push(landed);
            return landed;
          };
        }
        const value = target[key];
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    let engine = await WorkflowEngine.start(gated, { workflows: [flow] });
    await engine.start(flow, { id: 'late-1' });
    await until(() => held.length > 0, "the step's start to be on its way");
    await engine.stop();
    release();
    await Promise.allSettled(held);
    await sleep(50);
    const afterStop = [...attempts];
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('late-1');
    await engine.stop();
    return { afterStop, attempts, result };
  },

  /**
   * Awaiting a run this engine runs reads the store when the run ends, not at each of its
   * commits; awaiting it from another engine (a tab that does not lead) reads at each notice.
   */
  async resultReads(open) {
    const store = await open('wf-reads');
    const flow = defineWorkflow('twenty', async (ctx) => {
      let sum = 0;
      for (let i = 0; i < 20; i++) sum += await ctx.step('s', () => i);
      return sum;
    });
    let reads = 0;
    const counted = new Proxy(store, {
      get(target, key) {
        const value = target[key];
        if (typeof value !== 'function') return value;
        if (key === 'workflowSummary' || key === 'getVisibility' || key === 'readHistoryFrom') {
          return (...args) => {
            if (args[0] === 'r1') reads++;
            return value.apply(target, args);
          };
        }
        return value.bind(target);
      },
    });
    const engine = await WorkflowEngine.start(counted, { workflows: [flow] });
    const handle = await engine.start(flow, { id: 'r1' });
    const startReads = reads; // the engine's own load of the run
    const result = await handle.result();
    await engine.stop();
    return { result, reads: reads - startReads };
  },

  /** Retries wait on durable timers; FatalError and the last attempt throw STEP_FAILED. */
  async retries(open) {
    const store = await open('wf-retry');
    const attempts = { flaky: [], fatal: 0, always: 0 };
    const retry = { maxAttempts: 4, initialIntervalMs: 30, backoffCoefficient: 2 };
    const flow = defineWorkflow('retrying', async (ctx) => {
      const flaky = await ctx.step('flaky', ({ attempt }) => {
        attempts.flaky.push({ attempt, at: Date.now() });
        if (attempt < 3) throw new Error(`down ${attempt}`);
        return attempt;
      }, { retry });
      const fatal = await ctx.step('fatal', () => {
        attempts.fatal++;
        throw new FatalError('card declined');
      }, { retry }).catch((e) => ({ code: e.code, attempts: e.attempts, cause: e.cause.name + ': ' + e.cause.message }));
      const always = await ctx.step('always', () => {
        attempts.always++;
        const error = new Error('still down');
        error.code = 'E_DOWN';
        throw error;
      }, { retry: { maxAttempts: 2, initialIntervalMs: 10 } }).catch((e) => ({ code: e.code, attempts: e.attempts, causeCode: e.cause.code }));
      return { flaky, fatal, always };
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await (await engine.start(flow, { id: 'r1' })).result();
    const events = await history(store, 'r1');
    await engine.stop();
    const gaps = attempts.flaky.slice(1).map((a, i) => a.at - attempts.flaky[i].at);
    const causes = events.filter((e) => e.kind === 'stepAttempt').map((e) => e.data.cause);
    return { result, attempts: { flaky: attempts.flaky.map((a) => a.attempt), fatal: attempts.fatal, always: attempts.always }, gaps, kinds: events.map((e) => e.kind), causes };
  },

  /** An error the code does not catch fails the run, recorded; result() says so. */
  async uncaughtErrorFailsRun(open) {
    const store = await open('wf-fail');
    const flow = defineWorkflow('failing', async (ctx) => {
      await ctx.step('first', () => 1);
      throw new TypeError('boom');
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const handle = await engine.start(flow, { id: 'x1' });
    const error = await rejection(handle.result());
    const described = await handle.describe();
    const record = await store.getVisibility('x1');
    await engine.stop();
    return { error, status: described.status, record: { status: record.status, failureReason: record.failureReason } };
  },

  /** Code that asks for other steps than its history has stops as NON_DETERMINISM, shown as blocked. */
  async nonDeterminism(open) {
    const store = await open('wf-nondet');
    const ran = [];
    const body = (name) => () => ran.push(name) && name;
    const v1 = defineWorkflow('changing', async (ctx) => {
      await ctx.step('a', body('a'));
      await ctx.sleep('pause', 100);
      return ctx.step('b', body('b'));
    });
    const v2 = defineWorkflow('changing', async (ctx) => {
      await ctx.step('renamed', body('renamed'));
      await ctx.sleep('pause', 100);
      return ctx.step('b', body('b'));
    });
    const errors = [];
    let engine = await WorkflowEngine.start(store, { workflows: [v1] });
    await engine.start(v1, { id: 'n1' });
    await waitingOn(engine, 'n1', 'sleep');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [v2], onError: (e) => errors.push(e.code) });
    const error = await rejection(until(() => engine.describe('n1').then((d) => d.status === 'blocked'), 'blocked').then(() => engine.result('n1')));
    const blocked = await engine.describe('n1');
    await sleep(200);
    const ranWhileBlocked = [...ran];
    await engine.stop();
    // The code as it was: the run goes on.
    engine = await WorkflowEngine.start(store, { workflows: [v1] });
    await until(async () => (await engine.describe('n1')).status !== 'blocked', 'the run to go on');
    const result = await engine.result('n1');
    await engine.stop();
    return { error, blocked: { status: blocked.status, failureReason: blocked.failureReason }, ranWhileBlocked, errors, result, ran };
  },

  /** ctx.now, random and uuid come back as recorded; patched() tells old runs from new ones. */
  async recordedValuesAndPatches(open) {
    const store = await open('wf-values');
    const seen = [];
    const values = defineWorkflow('values', async (ctx) => {
      const v = [ctx.now(), ctx.random(), ctx.uuid()];
      await ctx.step('see', () => seen.push(v));
      await ctx.sleep('pause', 100);
      return v;
    });
    const v1 = defineWorkflow('patching', async (ctx) => {
      const path = await ctx.step('old', () => 'old');
      await ctx.sleep('pause', 100);
      return path;
    });
    const v2 = defineWorkflow('patching', async (ctx) => {
      const path = ctx.patched('new-path') ? await ctx.step('new', () => 'new') : await ctx.step('old', () => 'old');
      await ctx.sleep('pause', 100);
      return path;
    });
    // A patch checked while a step runs, and later taken out of the code again.
    const checked = defineWorkflow('unpatching', async (ctx) => {
      const step = ctx.step('step', () => 'stepped');
      if (ctx.patched('checked')) await ctx.sleep('pause', 100);
      return step;
    });
    const unchecked = defineWorkflow('unpatching', async (ctx) => {
      const step = ctx.step('step', () => 'stepped');
      await ctx.sleep('pause', 100);
      return step;
    });
    let engine = await WorkflowEngine.start(store, { workflows: [values, v1, checked] });
    await engine.start(values, { id: 'v1' });
    await engine.start(v1, { id: 'old-run' });
    await engine.start(checked, { id: 'unpatched-run' });
    await waitingOn(engine, 'v1', 'sleep');
    await waitingOn(engine, 'old-run', 'sleep');
    await waitingOn(engine, 'unpatched-run', 'sleep');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [values, v2, unchecked] });
    const result = await engine.result('v1');
    const oldRun = await engine.result('old-run');
    const unpatched = await engine.result('unpatched-run');
    const newRun = await (await engine.start(v2, { id: 'new-run' })).result();
    const kinds = (await history(store, 'new-run')).map((e) => e.kind);
    await engine.stop();
    return { seen, result, oldRun, newRun, kinds, unpatched };
  },

  /** Parallel steps finish in any order and replay to the same values, each body run once. */
  async parallelSteps(open) {
    const store = await open('wf-parallel');
    const calls = [];
    const step = (name, ms) => () => sleep(ms).then(() => calls.push(name) && name);
    const flow = defineWorkflow('parallel', async (ctx) => {
      const all = await Promise.all([ctx.step('slow', step('slow', 60)), ctx.step('fast', step('fast', 5)), ctx.step('mid', step('mid', 30))]);
      const first = await Promise.race([ctx.step('r1', step('r1', 40)), ctx.step('r2', step('r2', 1))]);
      await ctx.sleep('pause', 150);
      return { all, first };
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    await engine.start(flow, { id: 'p1' });
    await waitingOn(engine, 'p1', 'sleep');
    await until(() => calls.length === 5, 'the race loser to finish');
    await engine.stop();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('p1');
    await engine.stop();
    return { result, calls };
  },

  /** A timer due while no engine ran fires at the next start, never before its time. */
  async timerDueWhileStopped(open) {
    const store = await open('wf-timer');
    const flow = defineWorkflow('sleeper', async (ctx) => {
      await ctx.sleep('nap', 200);
      return 'woke';
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    await engine.start(flow, { id: 's1' });
    await waitingOn(engine, 's1', 'sleep');
    const timers = (await store.listTimers()).items.map((t) => t.timerId);
    await engine.stop();
    await sleep(400);
    const restartedAt = Date.now();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('s1');
    const events = await history(store, 's1');
    const fired = events.find((e) => e.kind === 'timerFired');
    const timersAfter = (await store.listTimers()).items.length;
    await engine.stop();
    return { result, timers, timersAfter, firedAfterRestart: fired.at >= restartedAt, early: earlyTimers(events) };
  },

  /** Signals: once per id, kept until waited for, in order; a wait times out; unknown and ended workflows. */
  async signals(open) {
    const store = await open('wf-signals');
    const flow = defineWorkflow('approvals', async (ctx) => {
      await ctx.sleep('before', 150);
      const first = await ctx.waitForSignal('vote');
      const second = await ctx.waitForSignal('vote');
      const late = await ctx.waitForSignal('never', { timeoutMs: 80 });
      const third = await ctx.waitForSignal('vote', { timeoutMs: 5000 });
      return { first, second, late: late === undefined ? 'timed out' : late, third };
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const handle = await engine.start(flow, { id: 'a1' });
    const sent = [];
    sent.push(await engine.signal('a1', 'vote', { n: 1 }, { signalId: 'v1' }));
    sent.push(await engine.signal('a1', 'vote', { n: 2 }, { signalId: 'v2' }));
    sent.push(await engine.signal('a1', 'vote', { n: 99 }, { signalId: 'v1' })); // the same id again
    await waitingOn(engine, 'a1', 'wait vote');
    sent.push(await handle.signal('vote', { n: 3 }));
    const result = await handle.result();
    const unknown = await rejection(engine.signal('nobody', 'vote', 1));
    await engine.signal('a1', 'vote', { n: 4 }, { signalId: 'after-end' });
    const dead = await until(async () => (await store.listOutbox('failed', { limit: 10 })).items.find((r) => r.dispatchKey.includes('after-end')), 'the dead letter');
    const received = (await history(store, 'a1')).filter((e) => e.kind === 'signal').map((e) => e.data.signalId);
    await engine.stop();
    return { result, duplicates: sent.map((s) => s.duplicate), unknown, deadReason: dead.deadReason, received };
  },

  /** Children: awaited, failed, detached, and an id that is taken. */
  async children(open) {
    const store = await open('wf-children');
    const double = defineWorkflow('double', async (ctx, n) => ctx.step('double', () => n * 2));
    const broken = defineWorkflow('broken', async () => {
      throw new Error('child broke');
    });
    const parent = defineWorkflow('parent', async (ctx) => {
      const doubled = await ctx.child(double, { input: 21 });
      const failed = await ctx.child(broken).catch((e) => ({ code: e.code, message: e.message }));
      const detached = await ctx.startChild(double, { id: 'detached-child', input: 5 });
      const taken = await ctx.child(double, { id: 'taken', input: 1 }).catch((e) => e.code);
      return { doubled, failed, detached, taken };
    });
    const engine = await WorkflowEngine.start(store, { workflows: [double, broken, parent] });
    await engine.start(double, { id: 'taken', input: 100 });
    const result = await (await engine.start(parent, { id: 'par' })).result();
    const detachedResult = await engine.result('detached-child');
    const takenResult = await engine.result('taken');
    const childIds = (await store.listVisibility({ workflowType: 'double' }, 10, null)).records.map((r) => r.workflowId).sort();
    await engine.stop();
    return { result, detachedResult, takenResult, childIds };
  },

  /** cancel() raises CANCELLED at the next await, cleanup steps run, attached children are cancelled. */
  async cancellation(open) {
    const store = await open('wf-cancel');
    let cleanups = 0;
    const napper = defineWorkflow('napper', async (ctx) => {
      await ctx.sleep('long', 60_000);
      return 'rested';
    });
    const flow = defineWorkflow('cancellable', async (ctx) => {
      const child = ctx.child(napper, { id: 'nap-child' });
      try {
        await ctx.sleep('long', 60_000);
        return 'slept';
      } catch (error) {
        await ctx.step('cleanup', () => ++cleanups);
        throw error;
      } finally {
        await child.catch(() => {});
      }
    });
    const engine = await WorkflowEngine.start(store, { workflows: [napper, flow] });
    const handle = await engine.start(flow, { id: 'k1' });
    await waitingOn(engine, 'k1', 'child');
    await waitingOn(engine, 'nap-child', 'sleep');
    await handle.cancel({ reason: 'user clicked stop' });
    await handle.cancel(); // asked twice, asked once
    const error = await rejection(handle.result());
    const childError = await rejection(engine.result('nap-child'));
    const timers = (await store.listTimers()).items;
    const described = await handle.describe();
    await engine.stop();
    return { error, childError, cleanups, timers, status: described.status };
  },

  /** continueAsNew starts the next run on a fresh history; result() follows to the last run. */
  async continueAsNew(open) {
    const store = await open('wf-can');
    const loop = defineWorkflow('loop', async (ctx, { i }) => {
      await ctx.step('tick', () => i);
      if (i < 4) return ctx.continueAsNew({ i: i + 1 });
      return i;
    });
    const engine = await WorkflowEngine.start(store, { workflows: [loop] });
    const result = await (await engine.start(loop, { id: 'l1', input: { i: 0 } })).result();
    const chain = await store.readRunChain('l1');
    await engine.stop();
    return { result, runs: chain.map((r) => [r.status, r.lastSeq - r.firstSeq + 1]) };
  },

  /** start() is idempotent by id; another type under a taken id is CONFLICT. */
  async startIdempotent(open) {
    const store = await open('wf-start');
    const a = defineWorkflow('a', async (ctx, n) => ctx.step('s', () => n));
    const b = defineWorkflow('b', async () => 'b');
    const engine = await WorkflowEngine.start(store, { workflows: [a, b] });
    const first = await engine.start(a, { id: 'same', input: 1 });
    const second = await engine.start(a, { id: 'same', input: 2 });
    const other = await rejection(engine.start(b, { id: 'same' }));
    const unregistered = await rejection(engine.start('nope'));
    const results = [await first.result(), await second.result()];
    const started = (await history(store, 'same')).filter((e) => e.kind === 'started').length;
    const { origin, runsHere } = await engine.describe('same');
    await engine.stop();
    return { results, started, other, unregistered, origin, runsHere, device: engine.device };
  },

  /**
   * A run of another device (its journal pulled by sync) is shown, not run: its visibility
   * record is written from its journal as it grows, and signals to it are refused.
   */
  async anotherDevicesRun(open) {
    const store = await open('wf-elsewhere');
    let calls = 0;
    const flow = defineWorkflow('synced', async (ctx) => {
      await ctx.step('one', () => ++calls);
      return ctx.step('two', () => ++calls);
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    // What a pull brings: another device's run, one step done, then its end.
    const at = Date.now();
    const pulled = [
      { type: 'started', workflowType: 'synced', runId: 'r-far', recordedAt: at, data: { origin: 'far-device', parent: null } },
      { type: 'custom', name: 'step', recordedAt: at, data: { n: 0, step: 'one', attempt: 1 } },
      { type: 'custom', name: 'stepDone', recordedAt: at, data: { n: 0, result: 1 } },
    ];
    await store.append('far-1', pulled, 0);
    const shown = await until(() => store.getVisibility('far-1'), 'the record of the pulled run');
    const described = await engine.describe('far-1');
    const signal = await rejection(engine.signal('far-1', 'go', 1));
    await store.append('far-1', [{ type: 'custom', name: 'step', recordedAt: at, data: { n: 1, step: 'two', attempt: 1 } },
      { type: 'custom', name: 'stepDone', recordedAt: at, data: { n: 1, result: 2 } },
      { type: 'completed', recordedAt: at + 1, data: { result: 2 } }], 3);
    const ended = await until(async () => {
      const record = await store.getVisibility('far-1');
      return record.status === 'completed' && record;
    }, 'the record of the pulled end');
    const result = await engine.result('far-1');
    await engine.stop();
    const attributes = ({ searchAttributes: { origin, steps, step } }) => ({ origin, steps, step });
    return {
      calls,
      shown: { status: shown.status, ...attributes(shown) },
      ended: { status: ended.status, head: ended.head, ...attributes(ended) },
      runsHere: described.runsHere,
      origin: described.origin,
      signal,
      result,
    };
  },

  /** retry() runs a failed workflow again, from the top, under its id, with its input. */
  async retryFailed(open) {
    const store = await open('wf-run-again');
    let broken = true;
    const flow = defineWorkflow('again', async (ctx, n) => ctx.step('double', () => {
      if (broken) throw new FatalError('down');
      return n * 2;
    }));
    const napper = defineWorkflow('napping', async (ctx) => ctx.sleep('long', 60_000));
    const engine = await WorkflowEngine.start(store, { workflows: [flow, napper] });
    const handle = await engine.start(flow, { id: 'again-1', input: 21 });
    const failed = await rejection(handle.result());
    await engine.start(napper, { id: 'still-running' });
    const running = await rejection(engine.retry('still-running'));
    broken = false;
    // Two calls at once (two tabs' buttons): one new run, both handles on it.
    const [again, twin] = await Promise.all([handle.retry(), engine.retry('again-1')]);
    const result = await again.result();
    const twinResult = await twin.result();
    const completed = await rejection(handle.retry());
    const runs = (await store.readRunChain('again-1')).map((r) => r.status);
    const record = await store.getVisibility('again-1');
    await engine.stop();
    return { first: failed.code, running: running.code, result, twinResult, completed: completed.code, runs, status: record.status };
  },

  /** Runs are in the visibility index: type, status, step, error. */
  async visibility(open) {
    const store = await open('wf-visibility');
    const ok = defineWorkflow('shown', async (ctx) => {
      await ctx.step('one', () => 1);
      await ctx.step('two', () => 2);
      return 'done';
    });
    const bad = defineWorkflow('shown-bad', async (ctx) => ctx.step('explode', () => {
      throw new FatalError('no fuel');
    }));
    const engine = await WorkflowEngine.start(store, { workflows: [ok, bad] });
    await (await engine.start(ok, { id: 'v-ok' })).result();
    await rejection((await engine.start(bad, { id: 'v-bad' })).result());
    const records = (await store.listVisibility({ search: [{ key: 'engine', op: 'eq', value: 'runstore/workflow' }] }, 10, null)).records;
    await engine.stop();
    return records
      .map((r) => ({ id: r.workflowId, type: r.workflowType, status: r.status, steps: r.searchAttributes.steps, step: r.searchAttributes.step, failureReason: r.failureReason }))
      .sort((x, y) => x.id.localeCompare(y.id));
  },

  /** What a step stages commits with its result, or its attempt fails with the store's error. */
  async stagedWrites(open) {
    const store = await open('wf-staged');
    const flow = defineWorkflow('staging', async (ctx) => {
      const saved = await ctx.step('save', ({ write, idempotencyKey }) => {
        write({ op: 'putArtifact', artifact: { scope: 'reports', mediaType: 'text/plain', name: 'r.txt', bytes: new TextEncoder().encode('hello'), idempotencyKey }, now: Date.now() });
        return 'saved';
      });
      const refused = await ctx.step('refused', ({ write }) => {
        write({ op: 'putArtifact', artifact: { scope: 'reports', mediaType: 'text/plain', bytes: new TextEncoder().encode('never'), idempotencyKey: 'x' }, now: Date.now() });
        write({ op: 'compareAndSwapCheckpoint', checkpoint: { checkpointId: 'cp', revision: 5, state: {}, updatedAt: 1 }, expectedRevision: 4 });
        return 'not saved';
      }, { retry: { maxAttempts: 1 } }).catch((e) => ({ code: e.code, causeCode: e.cause.code }));
      return { saved, refused };
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await (await engine.start(flow, { id: 'w1' })).result();
    const artifacts = (await store.listArtifacts('reports', { limit: 10 })).items.map((a) => a.name);
    await engine.stop();
    return { result, artifacts };
  },

  /** A run of many steps replays without running any of them again; how long the replay takes. */
  async longReplay(open, { steps = 500 } = {}) {
    const store = await open('wf-long');
    let calls = 0;
    const flow = defineWorkflow('long', async (ctx, n) => {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += await ctx.step('s', () => ++calls && i);
      await ctx.sleep('end', 100);
      return sum;
    });
    let engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const firstRunStarted = Date.now();
    await engine.start(flow, { id: 'long', input: steps });
    await waitingOn(engine, 'long', 'sleep');
    const firstRunMs = Date.now() - firstRunStarted;
    await engine.stop();
    const replayStarted = Date.now();
    engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const result = await engine.result('long');
    const replayMs = Date.now() - replayStarted;
    await engine.stop();
    return { result, calls, firstRunMs, replayMs };
  },

  /** On runstore/core (an app's worker, Node) the engine runs in the process. */
  async onCore(openCore) {
    const store = await openCore('wf-core');
    const flow = defineWorkflow('core-flow', async (ctx, input) => {
      const a = await ctx.step('a', () => input + 1);
      await ctx.sleep('pause', 50);
      const signal = await ctx.waitForSignal('go');
      return { a, signal };
    });
    const engine = await WorkflowEngine.start(store, { workflows: [flow] });
    const handle = await engine.start(flow, { id: 'core-1', input: 1 });
    await handle.signal('go', 'now');
    const result = await handle.result();
    const busy = await rejection(WorkflowEngine.start(store, { workflows: [flow], onError: quiet }));
    await engine.stop();
    return { result, busy };
  },
};

/** Opens the page's client's store `name` on `persistence` (in Node, in the process). */
export const openClient = (name, medium) => RunStore.open(name, openOptions(medium));

/** Opens runstore/core's store `name` on `medium` (an app's worker, or Node). */
export async function openCore(name, medium) {
  await init();
  return RunStoreCore.open(name, openOptions(medium));
}

/** A medium as open options: a persistence's name, or the options themselves (a file's directory). */
const openOptions = (medium) => (typeof medium === 'string' ? { persistence: medium } : medium);

/** Runs case `name` with stores from `open(name)`; resolves to its report or `{ failed }`. */
export async function runWorkflowCase(name, open, options) {
  try {
    return await CASES[name](open, options);
  } catch (error) {
    // WebKit's `stack` holds the frames alone: the message goes first, for every engine.
    return { failed: error instanceof Error ? `${error}\n${error.stack}` : String(error) };
  }
}

/** The workflow of the many-tabs test: its steps say which tab ran them (`globalThis.tabName`). */
const tabFlow = defineWorkflow('tab-flow', async (ctx, { pauseMs }) => {
  const where = await ctx.step('where', () => globalThis.tabName ?? null);
  await ctx.sleep('pause', pauseMs);
  const approval = await ctx.waitForSignal('approve');
  const after = await ctx.step('after', () => globalThis.tabName ?? null);
  return { where, approval, after };
});

/** A workflow that sleeps: how late its durable timer fires, in whichever tab runs it. */
const napFlow = defineWorkflow('nap', async (ctx, ms) => {
  await ctx.sleep('nap', ms);
  return ms;
});

/** Opens the shared store `name` and starts this tab's engine on it; resolves to `{ store, engine }`. */
export async function openTabEngine(name) {
  const store = await RunStore.open(name, { persistence: 'opfs' });
  const engine = await WorkflowEngine.start(store, { workflows: [tabFlow, napFlow] });
  return { store, engine };
}

/**
 * Runs a nap of each of `durations` (ms) through `engine` (started in this tab, run by the
 * leader's), its ids starting with `label`, and resolves to how late each timer fired, from
 * the journal: `[ms, lateMs]`.
 */
export async function napLateness(engine, store, durations, label) {
  const handles = await Promise.all(durations.map((ms, i) => engine.start('nap', { id: `${label}-${i}-${ms}`, input: ms })));
  await Promise.all(handles.map((handle) => handle.result()));
  const late = [];
  for (const [i, ms] of durations.entries()) {
    const events = await history(store, handles[i].workflowId);
    const { fireAt } = events.find((e) => e.kind === 'sleep').data;
    late.push([ms, events.find((e) => e.kind === 'timerFired').at - fireAt]);
  }
  return late;
}
