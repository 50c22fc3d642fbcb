// runstore/workflow, the engine, as an app uses it: the packed package installed into tests/app.
// One suite, two hosts, as tests/js/package.test.mjs: by default in a page of the test app in
// the engine RUNSTORE_ENGINE names (its stores on RUNSTORE_MEDIUM), with RUNSTORE_HOST=node in
// this process on memory (with RUNSTORE_MEDIUM=file in files). Each case (tests/app/src/workflow-cases.js) runs real workflows on a
// real store where the package runs and reports what it saw; the assertions are here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ENGINE, useTestApp } from './browser.mjs';

const IN_NODE = process.env.RUNSTORE_HOST === 'node';
const app = IN_NODE ? null : useTestApp();
const inBrowser = (needs) => ({ skip: IN_NODE && `needs a browser: ${needs}` });

/** Where a store lives in Node: memory, or with RUNSTORE_MEDIUM=file a file in a temporary directory removed after. */
const NODE_MEDIUM = IN_NODE && process.env.RUNSTORE_MEDIUM === 'file' ? fileStores() : 'memory';

function fileStores() {
  const directory = mkdtempSync(join(tmpdir(), 'runstore-workflow-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  return { persistence: 'file', directory };
}

async function openApp() {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
}

let stores = 0;

/** Runs case `name` where the package runs; resolves to its report (a failed case fails here). */
async function runCase(name, options = {}) {
  let report;
  if (IN_NODE) {
    const { runWorkflowCase, openClient, openCore } = await import('../app/src/workflow-cases.js');
    // Each store under a name of its own: memory stores are private to their client anyway,
    // and a store in a file (RUNSTORE_MEDIUM=file) is its file.
    const open = name === 'onCore' ? (store) => openCore(`${store}-${stores++}`, NODE_MEDIUM) : (store) => openClient(`${store}-${stores++}`, NODE_MEDIUM);
    report = await runWorkflowCase(name, open, options);
  } else {
    const page = await openApp();
    try {
      report = await page.evaluate(([name, options]) => window.runWorkflowCase(name, options), [name, options]);
    } finally {
      await page.close();
    }
  }
  assert.equal(report?.failed, undefined, report?.failed);
  return report;
}

const title = (text) => `${text} (${IN_NODE ? 'node' : ENGINE})`;

test(title('a recorded step does not run again when its run replays'), async () => {
  const report = await runCase('stepsRecordedOnce');
  assert.deepEqual(report.result, { a: 2, b: 10 });
  assert.deepEqual(report.calls, { a: 1, b: 1 });
  assert.deepEqual(report.kinds, ['started', 'step', 'stepDone', 'sleep', 'timerFired', 'step', 'stepDone', 'completed']);
  assert.deepEqual(report.early, []);
});

test(title('a body cut off by its engine runs again with the same idempotency key and the next attempt'), async () => {
  const report = await runCase('cutOffBodyRunsAgain');
  assert.deepEqual(report.result, { charged: true, attempt: 2 });
  assert.equal(report.seen.length, 2);
  assert.equal(report.seen[0].idempotencyKey, report.seen[1].idempotencyKey);
  assert.deepEqual(report.seen.map((s) => s.attempt), [1, 2]);
  // The cut-off attempt's late answer was not recorded: the ledger holds attempt 2's.
  assert.deepEqual(report.effect, { status: { type: 'completed', output: { charged: true, attempt: 2 } }, attempt: 2 });
  assert.deepEqual(report.attempt, { n: 0, attempt: 2, cause: 'restart' }, 'the journal says why the body ran again');
});

test(title("a body cut off during its last allowed attempt is not run again: the step fails with its attempts spent"), async () => {
  const report = await runCase('cutOffLastAttemptFails');
  assert.deepEqual(report.attempts, [1, 2], 'no third attempt for maxAttempts 2');
  assert.equal(report.result.code, 'STEP_FAILED');
  assert.equal(report.result.attempts, 2);
  assert.match(report.result.cause.message, /engine stopped during attempt 2/);
  assert.deepEqual(report.kinds, ['started', 'step', 'stepRetry', 'stepAttempt', 'stepFailed', 'completed']);
  assert.equal(report.stepFailed.attempts, 2);
  assert.deepEqual(report.effect, { status: 'failed', attempt: 2 });
});

test(title('a once step cut off by its engine is OUTCOME_UNKNOWN and never runs again'), async () => {
  const report = await runCase('onceStepOutcomeUnknown');
  assert.equal(report.calls, 1);
  const [[status, key]] = report.unresolved;
  assert.equal(status, 'outcomeUnknown');
  assert.deepEqual(report.result, { code: 'OUTCOME_UNKNOWN', step: 'pay', idempotencyKey: key }, 'the error names the key to look the call up by');
  assert.deepEqual(report.handleResult, report.result, "the first engine's handle hears the result too");
});

test(title('a step whose start lands after its engine stopped runs in the next engine, not the stopped one'), async () => {
  const report = await runCase('landsAfterStop');
  assert.deepEqual(report.afterStop, [], 'the stopped engine started no body');
  assert.deepEqual(report.attempts, [2], 'the next engine ran it, as the attempt after the recorded one');
  assert.equal(report.result, 1);
});

test(title('awaiting a run the engine runs reads the store when it ends, not at each of its commits'), async () => {
  const report = await runCase('resultReads');
  assert.equal(report.result, 190);
  // The run's load (summary, visibility, history) and result()'s reads: a dozen at most, where
  // a read at each of its 21 commits would make 40 and more.
  assert.ok(report.reads <= 12, `${report.reads} reads`);
});

test(title('retries back off on durable timers; FatalError and the last attempt throw STEP_FAILED'), async () => {
  const report = await runCase('retries');
  assert.deepEqual(report.result, {
    flaky: 3,
    fatal: { code: 'STEP_FAILED', attempts: 1, cause: 'FatalError: card declined' },
    always: { code: 'STEP_FAILED', attempts: 2, causeCode: 'E_DOWN' },
  });
  assert.deepEqual(report.attempts, { flaky: [1, 2, 3], fatal: 1, always: 2 });
  // 30 ms, then 60 ms (backoffCoefficient 2), never sooner.
  assert.ok(report.gaps[0] >= 30 && report.gaps[1] >= 60, `gaps ${report.gaps}`);
  assert.deepEqual(report.kinds.slice(0, 7), ['started', 'step', 'stepRetry', 'stepAttempt', 'stepRetry', 'stepAttempt', 'stepDone']);
  assert.deepEqual(report.causes, ['retry', 'retry', 'retry']);
});

test(title('an error the code does not catch fails the run, and result() says why'), async () => {
  const report = await runCase('uncaughtErrorFailsRun');
  assert.equal(report.error.code, 'WORKFLOW_FAILED');
  assert.equal(report.error.isError, true);
  assert.deepEqual(report.error.cause, { name: 'TypeError', message: 'boom', code: null });
  assert.equal(report.status, 'failed');
  assert.deepEqual(report.record, { status: 'failed', failureReason: 'boom' });
});

test(title('code that no longer matches its history stops as NON_DETERMINISM, shown as blocked, and goes on with the code it had'), async () => {
  const report = await runCase('nonDeterminism');
  assert.equal(report.error.code, 'NON_DETERMINISM');
  assert.match(report.error.message, /asks for step renamed where the history has step a/);
  assert.equal(report.blocked.status, 'blocked');
  assert.match(report.blocked.failureReason, /no longer replays/);
  assert.deepEqual(report.ranWhileBlocked, ['a'], 'nothing of the changed code ran');
  assert.deepEqual(report.errors, ['NON_DETERMINISM']);
  assert.equal(report.result, 'b');
  assert.deepEqual(report.ran, ['a', 'b']);
});

test(title('now(), random() and uuid() replay as recorded; patched() tells old runs from new ones'), async () => {
  const report = await runCase('recordedValuesAndPatches');
  assert.equal(report.seen.length, 1);
  assert.deepEqual(report.result, report.seen[0]);
  assert.equal(report.oldRun, 'old');
  assert.equal(report.newRun, 'new');
  assert.deepEqual(report.kinds.slice(0, 3), ['started', 'patch', 'step']);
  assert.equal(report.unpatched, 'stepped', 'a patch no longer checked for is passed over');
});

test(title('parallel steps replay to the same values, each body run once'), async () => {
  const report = await runCase('parallelSteps');
  assert.deepEqual(report.result, { all: ['slow', 'fast', 'mid'], first: 'r2' });
  assert.deepEqual([...report.calls].sort(), ['fast', 'mid', 'r1', 'r2', 'slow']);
});

test(title('a timer that fell due while no engine ran fires at the next start, never early'), async () => {
  const report = await runCase('timerDueWhileStopped');
  assert.equal(report.result, 'woke');
  assert.deepEqual(report.timers, ['sleep/nap'], 'the sleep is a durable timer in the store');
  assert.equal(report.timersAfter, 0);
  assert.equal(report.firedAfterRestart, true);
  assert.deepEqual(report.early, []);
});

test(title('signals: kept once per id, buffered before the wait, in order; a wait times out; unknown and ended workflows'), async () => {
  const report = await runCase('signals');
  assert.deepEqual(report.result, { first: { n: 1 }, second: { n: 2 }, late: 'timed out', third: { n: 3 } });
  assert.deepEqual(report.duplicates, [false, false, true, false]);
  assert.equal(report.received.length, 3);
  assert.deepEqual(report.received.slice(0, 2), ['v1', 'v2']);
  assert.equal(report.unknown.code, 'NOT_FOUND');
  assert.match(report.deadReason, /a1 has ended/);
});

test(title('children: awaited, failed, detached, and a taken id'), async () => {
  const report = await runCase('children');
  assert.deepEqual(report.result, {
    doubled: 42,
    failed: { code: 'WORKFLOW_FAILED', message: 'child workflow par/broken failed: child broke' },
    detached: { workflowId: 'detached-child' },
    taken: 'CONFLICT',
  });
  assert.equal(report.detachedResult, 10);
  assert.equal(report.takenResult, 200, 'the workflow that held the id is untouched');
  assert.deepEqual(report.childIds, ['detached-child', 'par/double', 'taken']);
});

test(title('cancel() raises CANCELLED at the next await, cleanup steps run, attached children are cancelled'), async () => {
  const report = await runCase('cancellation');
  assert.equal(report.error.code, 'CANCELLED');
  assert.match(report.error.message, /user clicked stop/);
  assert.equal(report.childError.code, 'CANCELLED');
  assert.equal(report.cleanups, 1);
  assert.deepEqual(report.timers, [], "the runs' timers are gone from the store");
  assert.equal(report.status, 'cancelled');
});

test(title('continueAsNew starts each run on a fresh history; result() follows to the last'), async () => {
  const report = await runCase('continueAsNew');
  assert.equal(report.result, 4);
  assert.equal(report.runs.length, 5);
  assert.deepEqual(report.runs.at(-1)[0], 'completed');
  // Each run holds its own few events, however long the loop.
  assert.ok(report.runs.every(([, events]) => events <= 5), JSON.stringify(report.runs));
});

test(title('start() is idempotent by id; another type under a taken id is CONFLICT'), async () => {
  const report = await runCase('startIdempotent');
  assert.deepEqual(report.results, [1, 1]);
  assert.equal(report.started, 1);
  assert.equal(report.other.code, 'CONFLICT');
  assert.equal(report.unregistered.code, 'INVALID_INPUT');
  assert.deepEqual([report.origin, report.runsHere], [report.device, true]);
});

test(title("another device's run (pulled by sync) is shown from its journal, not run, and refuses signals"), async () => {
  const report = await runCase('anotherDevicesRun');
  assert.equal(report.calls, 0, 'no step of it ran here');
  assert.deepEqual(report.shown, { status: 'running', origin: 'far-device', steps: 1, step: 'one' });
  assert.deepEqual(report.ended, { status: 'completed', head: 6, origin: 'far-device', steps: 2, step: 'two' });
  assert.deepEqual([report.origin, report.runsHere], ['far-device', false]);
  assert.equal(report.signal.code, 'CONFLICT');
  assert.match(report.signal.message, /runs on another device/);
  assert.equal(report.result, 2);
});

test(title('retry() runs a failed workflow again under its id with its input, once for two calls at once; not one that runs or completed'), async () => {
  const report = await runCase('retryFailed');
  assert.deepEqual(report, { first: 'WORKFLOW_FAILED', running: 'CONFLICT', result: 42, twinResult: 42, completed: 'CONFLICT', runs: ['failed', 'completed'], status: 'completed' });
});

test(title('runs are in the visibility index with their type, status, step and error'), async () => {
  const report = await runCase('visibility');
  assert.deepEqual(report, [
    { id: 'v-bad', type: 'shown-bad', status: 'failed', steps: 0, step: 'explode', failureReason: 'step explode failed after 1 attempt: no fuel' },
    { id: 'v-ok', type: 'shown', status: 'completed', steps: 2, step: 'two', failureReason: null },
  ]);
});

test(title("what a step stages commits with its result, or the attempt fails with the store's error"), async () => {
  const report = await runCase('stagedWrites');
  assert.deepEqual(report.result, { saved: 'saved', refused: { code: 'STEP_FAILED', causeCode: 'CONFLICT' } });
  assert.deepEqual(report.artifacts, ['r.txt'], 'the refused step wrote nothing');
});

test(title('a run of 500 steps replays without running one again'), async () => {
  const report = await runCase('longReplay', { steps: 500 });
  assert.equal(report.result, (499 * 500) / 2);
  assert.equal(report.calls, 500);
  console.log(`500 steps (${IN_NODE ? 'node' : ENGINE}): first run ${report.firstRunMs} ms, replay ${report.replayMs} ms`);
});

test(title('on runstore/core (an app worker, Node) the engine runs in the process; one engine per store'), async () => {
  const report = await runCase('onCore');
  assert.deepEqual(report.result, { a: 2, signal: 'now' });
  assert.equal(report.busy.code, 'BUSY');
});

test(title("many tabs: the leader's engine runs, any tab starts, signals and awaits, the next leader resumes"), inBrowser('tabs'), async () => {
  const a = await openApp();
  const b = await openApp();
  try {
    assert.equal(await a.evaluate(() => window.openTabEngine('wf-tabs', 'A')), true);
    assert.equal(await b.evaluate(() => window.openTabEngine('wf-tabs', 'B')), false);
    const first = await b.evaluate(async () => {
      const handle = await window.tab.engine.start('tab-flow', { id: 't1', input: { pauseMs: 50 } });
      await handle.signal('approve', 'yes');
      return handle.result();
    });
    assert.deepEqual(first, { where: 'A', approval: 'yes', after: 'A' });
    await b.evaluate(async () => {
      await window.tab.engine.start('tab-flow', { id: 't2', input: { pauseMs: 1500 } });
      for (;;) {
        const { waiting } = await window.tab.engine.describe('t2');
        if (waiting?.startsWith('sleep')) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    await a.close();
    const second = await b.evaluate(async () => {
      await window.tab.engine.signal('t2', 'approve', 'later');
      return { result: await window.tab.engine.result('t2'), leads: window.tab.store.isLeader, running: window.tab.engine.running };
    });
    assert.deepEqual(second, { result: { where: 'A', approval: 'later', after: 'B' }, leads: true, running: true });
  } finally {
    await b.close();
    if (!a.isClosed?.()) await a.close().catch(() => {});
  }
});

test(title("a hidden leader's durable timers never fire early; how late they fire is printed"), inBrowser('tabs'), async () => {
  const leader = await openApp();
  const follower = await openApp();
  try {
    assert.equal(await leader.evaluate(() => window.openTabEngine('wf-hidden', 'leader')), true);
    await follower.evaluate(() => window.openTabEngine('wf-hidden', 'follower'));
    const durations = [20, 200, 1000, 2500];
    const state = () => leader.evaluate(() => document.visibilityState);
    await leader.bringToFront();
    const before = await state();
    const front = await leader.evaluate((durations) => window.napLateness(durations, 'front'), durations);
    await follower.bringToFront();
    // Browsers slow a tab's timers once it has been hidden a while, not at once.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const after = await state();
    const behind = await follower.evaluate((durations) => window.napLateness(durations, 'behind'), durations);
    for (const [ms, late] of [...front, ...behind]) assert.ok(late >= 0, `a ${ms} ms timer fired ${-late} ms early`);
    const show = (list) => list.map(([ms, late]) => `${ms} ms +${late}`).join(', ');
    console.log(`${ENGINE}: leader in front (${before}): ${show(front)}; follower in front, leader ${after}: ${show(behind)}`);
  } finally {
    await follower.close();
    await leader.close();
  }
});

/** The first workflow's files (docs/workflows.md; the README shows shop.js), as scripts/build-test-app.sh extracted them into the test app. */
const README_FILES = new URL('../app/src/readme-workflows/', import.meta.url);

/** What one of those files says it prints: its `console.log(...); // → text` lines. */
const promised = (file) => [...readFileSync(new URL(file, README_FILES), 'utf8').matchAll(/console\.log\(.*\); \/\/ → (.*)$/gm)].map((m) => m[1].trim());

test(title("the first workflow of the README and docs/workflows.md runs as written"), async () => {
  if (IN_NODE) {
    const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('node.js', README_FILES))], { timeout: 30_000 });
    assert.deepEqual(stdout.trim().split('\n'), promised('node.js'));
    return;
  }
  const page = await openApp();
  const printed = [];
  page.on('console', (message) => printed.push(message.text()));
  try {
    await page.evaluate(() => window.runReadmeWorkflows());
    assert.deepEqual(printed.filter((line) => promised('page.js').includes(line)), promised('page.js'), printed.join('\n'));
  } finally {
    await page.close();
  }
});
