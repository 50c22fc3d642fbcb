// Durable workflows in Node on a store in a file, across killed processes: a runner process
// (node-file-workflow-runner.mjs) runs three workflows whose steps call a counting service on
// loopback with their idempotency keys; the test kills it with SIGKILL at a random moment after
// its first call to the service and starts another on the same file, until the runs complete.
// Every run completes with the sum of its steps' answers, each step has one key, and a key is
// called again only for a step that was in flight when a process was killed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { answer, startService } from './workflow-chaos-service.mjs';

const RUNNER = fileURLToPath(new URL('./node-file-workflow-runner.mjs', import.meta.url));
const IDS = ['trip-a', 'trip-b', 'trip-c'];
const MAX_KILLS = 6;
/** Steps per workflow. */
const LEGS = 6;

const directory = mkdtempSync(join(tmpdir(), 'runstore-file-workflows-'));
after(() => rmSync(directory, { recursive: true, force: true }));

/** Starts a runner; resolves `exited` with its exit code and collects its `done` lines. */
function startRunner(url, label, done) {
  const child = spawn(process.execPath, [RUNNER, directory, url, label, String(LEGS), ...IDS], { stdio: ['ignore', 'pipe', 'inherit'] });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [word, id, result] = line.split(' ');
    if (word === 'done') done.set(id, Number(result));
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  return { child, exited };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once the service has had a call from the runner `label`. */
async function calledBy(service, label) {
  while (!service.calls.some((call) => call.tab === label)) await sleep(5);
}

test('workflows on a store in a file complete across processes killed mid-run, each step performed once but where a kill cut it off', async () => {
  const service = await startService({ minDelayMs: 20, maxDelayMs: 120 });
  try {
    const done = new Map();
    /** When each killed runner was killed, by its label. */
    const killed = new Map();
    let kills = 0;
    for (let runner = 0; done.size < IDS.length; runner++) {
      assert.ok(runner < MAX_KILLS + 3, `runs not done after ${runner} runners: ${[...done.keys()]}`);
      const label = `runner-${runner}`;
      const { child, exited } = startRunner(service.url, label, done);
      // A runner is killed at a random moment once it has called the service (a step in
      // flight, or one or more recorded); past the kills, it runs to its end.
      const kill = kills < MAX_KILLS ? calledBy(service, label).then(() => sleep(Math.random() * 400)).then(() => 'kill') : new Promise(() => {});
      const ended = await Promise.race([exited, kill]);
      if (ended === 'kill') {
        killed.set(`runner-${runner}`, Date.now());
        child.kill('SIGKILL');
        await exited;
        kills += 1;
      } else {
        assert.equal(ended, 0, `runner-${runner} ended with ${ended}`);
      }
    }
    assert.ok(kills >= 1, 'no runner was killed');
    const calls = service.calls;
    for (const id of IDS) {
      const keys = [];
      for (let leg = 0; leg < LEGS; leg++) {
        const legKeys = new Set(calls.filter((c) => c.workflowId === id && c.step === `leg-${leg}`).map((c) => c.key));
        assert.equal(legKeys.size, 1, `${id} leg-${leg}: keys ${[...legKeys]}`);
        keys.push(...legKeys);
      }
      const expected = keys.reduce((sum, key) => (sum + answer(key)) >>> 0, 0);
      assert.equal(done.get(id), expected, `${id}: the result is the sum of its legs' answers`);
    }
    // A key called again: its step was in flight (called, not yet recorded) when a runner died.
    const byKey = new Map();
    for (const c of calls) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c]);
    const again = [...byKey.values()].filter((keyed) => keyed.length > 1);
    assert.ok(again.length <= kills * IDS.length, `${again.length} steps performed again after ${kills} kills`);
    for (const keyed of again) {
      // Every call but the last came from a runner killed after making it, before its answer
      // could be recorded.
      for (const call of keyed.slice(0, -1)) {
        assert.ok(killed.get(call.tab) >= call.at, `${call.key} called again after ${call.tab}, which was not killed after calling it`);
      }
    }
    console.log(`${IDS.length} workflows of ${LEGS} steps: ${kills} runners killed, ${calls.length} calls for ${byKey.size} steps, ${again.length} performed again`);
  } finally {
    await service.close();
  }
});
