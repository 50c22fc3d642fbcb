// Negative controls of the sync checker (tests/js/sync-faults.test.mjs): the checker runs
// against copies of the package's sync client with a known defect put back, and must fail on
// each with the assertion that names it. A checker that passed them would prove nothing.
// - An old push id: the id covered the workflow, the base and the count, not the events, and
//   the server answered any id it held as a replay. The client here gets the server's refusal
//   of a reused id (CONFLICT) and takes it as the replay the old server gave, so a store rolled
//   back that pushes other events from the same head loses them silently.
// - A conflict taken as agreement: the client adopts the server's head on SEQUENCE_CONFLICT
//   instead of reporting it, so the two sides differ with nothing said.
// - A server that ignores claim tokens: the checker's outbox calls go through a relay
//   (tests/js/unfenced-relay.mjs) that rewrites each completion to the last token handed out,
//   so a late worker's completion under a replaced token applies.
// - Devices that run step bodies past their leases (the engine's deadline timer and its check
//   before a body taken out): the lease checker finds a body started after its lease ended.
// - A server that does not check lease epochs: the lease checker's devices
//   (tests/js/sync-leases-check.test.mjs) push through a relay that rewrites each push to the
//   lease the server holds, so a paused device's late push of a step lands after another
//   device took the run over and ran that step.
// Each patch names the exact text it replaces: a change of js/sync.js that removes it fails
// here, rather than leaving a control that no longer puts the defect back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const JS = fileURLToPath(new URL('../../js/', import.meta.url));
const CHECKER = fileURLToPath(new URL('./sync-faults.test.mjs', import.meta.url));

const CONTROLS = [
  {
    name: 'an old push id, with a reused id taken as a replay',
    patches: [
      ["  if (!globalThis.crypto?.subtle) return `${clientId}.${randomId()}`;",
        '  return `${clientId}.${workflowId}.${base}.${events.length}`;'],
      ["      if (error.code !== 'SEQUENCE_CONFLICT') throw error;",
        "      if (error.code === 'CONFLICT') {\n        await state.saveHead(store, workflow, base + events.length, 'synced');\n        pushed += events.length;\n        continue;\n      }\n      if (error.code !== 'SEQUENCE_CONFLICT') throw error;"],
    ],
    // The rolled-back client's other events are lost silently: the checker finds the copies
    // apart, or sees no conflict reported after the rollback, whichever it checks first.
    fails: /differs from the server's and was not reported|the server lost, reordered or added events|no conflict after the rollback/,
  },
  {
    name: 'a conflict taken as agreement',
    patches: [
      ["      await state.saveHead(store, workflow, base, 'conflict');",
        "      await state.saveHead(store, workflow, error.actual, 'synced');\n      return pushed;"],
    ],
    fails: /differs from the server's and was not reported|did not converge|the server lost, reordered or added events/,
  },
  {
    name: 'a server that ignores claim tokens',
    patches: [],
    env: { SYNC_CHECK_UNFENCED: '1' },
    fails: /was completed under the replaced token/,
  },
];

/** A copy of js/ with `patches` (file name → [from, to] pairs) applied; its folder, and its sync.js as a file URL. */
function patchedCopy(patches) {
  const dir = mkdtempSync(join(tmpdir(), 'runstore-control-'));
  cpSync(JS, dir, { recursive: true });
  for (const [name, pairs] of Object.entries(patches)) {
    const file = join(dir, name);
    let source = readFileSync(file, 'utf8');
    for (const [from, to] of pairs) {
      assert.equal(source.split(from).length, 2, `js/${name} no longer holds, once, the text this control replaces:\n${from}`);
      source = source.replace(from, () => to);
    }
    writeFileSync(file, source);
  }
  return { dir, url: pathToFileURL(join(dir, 'sync.js')).href, jsUrl: pathToFileURL(`${dir}/`).href };
}

/**
 * Seeds a control's checker runs over until one fails: a defect shows only where the run's
 * faults and timing lead to it (a rollback pushing other events from a head it pushed from
 * before, a late completion under a replaced token), which one seed does not always bring.
 */
const SEEDS = [1234, 1, 2, 3, 4, 5];

/** Runs the checker's main test with the client at `url`; its exit code and output. */
function runChecker(url, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--test', '--test-name-pattern=sync through', CHECKER], {
      // Without the runner's own NODE_TEST_CONTEXT, the child runs as a test run of its own.
      env: { ...process.env, NODE_TEST_CONTEXT: undefined, SYNC_CHECK_CLIENT: url, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

for (const control of CONTROLS) {
  test(`the sync checker fails on ${control.name}`, { timeout: 300_000 }, async () => {
    const client = patchedCopy({ 'sync.js': control.patches });
    try {
      let run;
      for (const seed of SEEDS) {
        run = await runChecker(client.url, { ...control.env, SYNC_FAULT_SEED: String(seed) });
        if (run.code !== 0) break;
      }
      const { code, output } = run;
      const failure = output.split('\n').filter((line) => /error:|AssertionError|^not ok/.test(line)).slice(0, 6).join('\n');
      console.log(`# ${control.name}: exit ${code}\n${failure.replace(/^/gm, '# ')}`);
      assert.notEqual(code, 0, `the checker passed a client with the defect put back, on seeds ${SEEDS}`);
      assert.match(output, control.fails);
    } finally {
      rmSync(client.dir, { recursive: true, force: true });
    }
  });
}

/** Runs the lease checker (tests/js/sync-leases-check.test.mjs) with `env` over seeds until one fails. */
async function runLeaseChecker(env) {
  const checker = fileURLToPath(new URL('./sync-leases-check.test.mjs', import.meta.url));
  let run;
  for (const seed of [2, 7, 1, 3, 4, 5]) {
    run = await new Promise((resolve) => {
      const child = spawn(process.execPath, ['--test', checker], {
        env: { ...process.env, NODE_TEST_CONTEXT: undefined, ...env, LEASE_CHECK_SEED: String(seed) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk) => { output += chunk; });
      child.stderr.on('data', (chunk) => { output += chunk; });
      child.on('exit', (code) => resolve({ code, output, seed }));
    });
    if (run.code !== 0) break;
  }
  const failure = run.output.split('\n').filter((line) => /error:|^not ok/.test(line)).slice(0, 4).join('\n');
  console.log(`# seed ${run.seed}: exit ${run.code}\n${failure.replace(/^/gm, '# ')}`);
  return run;
}

test('the lease checker fails on a server that does not check lease epochs', { timeout: 600_000 }, async () => {
  const run = await runLeaseChecker({ LEASE_CHECK_UNFENCED: '1' });
  assert.notEqual(run.code, 0, 'the lease checker passed a server that does not check epochs');
  assert.match(run.output, /two owners advanced the run|go back to an older owner/);
});

test('the lease checker fails on devices that run step bodies past their leases', { timeout: 600_000 }, async () => {
  // The engine without its stop on the device's clocks: no deadline timer, no check before a body.
  const copy = patchedCopy({
    'workflow-run.js': [['    if (exec.dead || !this.#engine.mayStartBody(this.workflowId)) return;', '    if (exec.dead) return;']],
    'workflow-leases.js': [['    entry.deadline = setTimeout(() => this.#expire(workflowId, entry), entry.until - this.#margin() - performance.now());', '    entry.deadline = null;'],
      ['    entry.deadline.unref?.();', '']],
  });
  try {
    const run = await runLeaseChecker({ LEASE_CHECK_JS: copy.jsUrl });
    assert.notEqual(run.code, 0, 'the lease checker passed devices that run bodies past their leases');
    assert.match(run.output, /after its lease \(epoch \d+\) ended on the server|after the server granted epoch/);
  } finally {
    rmSync(copy.dir, { recursive: true, force: true });
  }
});
