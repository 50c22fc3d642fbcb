// A store in a file in Node (`persistence: 'file'`), against real processes on real files in a
// temporary directory:
// - crash cycles: a writer process (node-file-writer.mjs) commits multi-area steps and is killed
//   with SIGKILL after a random number of acks plus a random short delay (seeded, as in
//   tests/crash_consistency.rs; 'full' durability most cycles, 'relaxed' some, since a killed
//   process must not lose a returned commit under either). Then a copy of the files passes stock
//   SQLite's `PRAGMA integrity_check` (better-sqlite3) and the store, opened here over the dead
//   writer's lock, holds every acknowledged step whole and nothing of a later one, but for at
//   most the one step whose ack the kill cut off. Some writers are killed in their open (the
//   lock's take-over, the WAL's recovery) instead;
// - two processes opening one store at once: exactly one gets it and the other BUSY, also when
//   they race for the lock of a holder that was killed;
// - a second open in the same process is BUSY, and the file opens again after close; in a
//   worker thread of the process too (its own wasm instance, the same pid).
// NODE_CRASH_CYCLES (default 100), NODE_RACE_ROUNDS (30) and CRASH_SEED change the run;
// `scripts/bench-crash.sh --node` runs many more cycles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { init, RunStoreCore } from '../../js/core.js';
import { Plan, xorshift, CHECKPOINT } from '../app/src/crash-plan.js';
import { check, committedSteps } from '../app/src/crash-check.js';

const cycles = Number(process.env.NODE_CRASH_CYCLES ?? 100);
const rounds = Number(process.env.NODE_RACE_ROUNDS ?? 30);
const seed = Number(process.env.CRASH_SEED ?? 0x5eed);
const WRITER = fileURLToPath(new URL('./node-file-writer.mjs', import.meta.url));
const NAME = 'crash';
/** Most acks before a kill, and most milliseconds of delay after them. */
const MAX_ACKS = 6;
const MAX_DELAY_MS = 4;
/** Most milliseconds after a writer said `opening` when it is killed in its open (an open after
 * a kill recovers the WAL: some 1 to 40 ms here). */
const MAX_OPEN_DELAY_MS = 40;
/** How long a child may take to say its next line: far more than it needs, less than forever. */
const CHILD_LIMIT_MS = 30_000;

// Stock SQLite, to check the file as any other reader would see it (tests/langgraph installs it).
const Database = (() => {
  try {
    return createRequire(new URL('../langgraph/package.json', import.meta.url))('better-sqlite3');
  } catch {
    throw new Error('better-sqlite3 is missing: `npm install --prefix tests/langgraph` installs it (scripts/test-js.sh does)');
  }
})();

const open = (directory, options = {}) => RunStoreCore.open(NAME, { persistence: 'file', directory, ...options });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tempDir = () => mkdtempSync(join(tmpdir(), 'runstore-node-file-'));

// A child left running by a failed test would hold its store forever: kill them on the way out.
const children = new Set();
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));

/** Starts node-file-writer.mjs with `args`, in a process of its own or in a worker thread of
 * this one; its stdout comes as lines. */
function start(args, { thread = false } = {}) {
  const child = thread
    ? new Worker(WRITER, { argv: args, stdin: true, stdout: true, stderr: true })
    : spawn(process.execPath, [WRITER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  if (!thread) children.add(child);
  const proc = { child, thread, lines: [], stderr: '', exit: null };
  let changed = () => {};
  createInterface({ input: child.stdout }).on('line', (line) => {
    proc.lines.push(line);
    changed();
  });
  child.stderr.on('data', (chunk) => { proc.stderr += chunk; });
  if (thread) child.on('error', (error) => { proc.stderr += error.stack; });
  proc.exited = new Promise((resolve) => child.on(thread ? 'exit' : 'close', (code, signal = null) => {
    children.delete(child);
    proc.exit = { code, signal };
    changed();
    resolve(proc.exit);
  }));
  /** Resolves to what `seen(lines)` returns once it is not undefined; rejects when the child
   * ends first or says nothing more for CHILD_LIMIT_MS (a hang). */
  proc.until = (seen) => new Promise((resolve, reject) => {
    const stop = (error, value) => {
      clearTimeout(timer);
      changed = () => {};
      if (error) reject(error);
      else resolve(value);
    };
    const timer = setTimeout(() => stop(new Error(
      `child ${args.join(' ')} hung: ${CHILD_LIMIT_MS} ms without what was awaited; it said ` +
      `${JSON.stringify(proc.lines.slice(-3))}`)), CHILD_LIMIT_MS);
    changed = () => {
      const value = seen(proc.lines);
      if (value !== undefined) stop(null, value);
      else if (proc.exit) stop(new Error(`child ${args.join(' ')} ended (${JSON.stringify(proc.exit)}): ${proc.stderr}`));
    };
    changed();
  });
  /** Resolves once the child ended, which it must within CHILD_LIMIT_MS. */
  proc.ended = () => proc.until(() => (proc.exit ? proc.exit : undefined));
  return proc;
}

/** Kills a child (if it still runs) and waits until it is gone. */
async function kill(proc) {
  if (proc.exit === null) {
    if (proc.thread) proc.child.terminate();
    else proc.child.kill('SIGKILL');
  }
  return proc.exited;
}

// ----- crash cycles -----

/** Runs a writer, kills it after `wantedAcks` acks plus `delayMs` (or, with `inOpen`, `delayMs`
 * after it began to open the store); returns the steps it found (null if it had not said) and
 * its acks. */
async function writeAndKill(directory, durability, acked, { wantedAcks, delayMs, inOpen }) {
  const args = ['write', directory, NAME, String(seed), durability, ...(acked === null ? [] : [String(acked)])];
  const writer = start(args);
  try {
    await writer.until((lines) => (inOpen ? lines.includes('opening') : lines.some((l) => l.startsWith('ready '))
      && lines.filter((l) => l.startsWith('ack ')).length >= wantedAcks) || undefined);
    await sleep(delayMs);
  } finally {
    await kill(writer);
  }
  if (writer.exit.signal !== 'SIGKILL') throw new Error(`the writer ended by itself (${JSON.stringify(writer.exit)}): ${writer.stderr}`);
  const acks = writer.lines.filter((l) => l.startsWith('ack ')).map((l) => {
    const [, k, how] = l.split(' ');
    return { k: Number(k), how };
  });
  const ready = writer.lines.find((l) => l.startsWith('ready '));
  return { ready: ready === undefined ? null : Number(ready.split(' ')[1]), acks };
}

/** The text of the store's lock file, '' when there is none. */
function readLock(directory) {
  try {
    return readFileSync(join(directory, `${NAME}.db.lock`), 'utf8');
  } catch {
    return '';
  }
}

/** Opens the store here after a kill. A writer killed between creating its lock file and
 * writing its pid into it leaves a lock naming nobody, which the medium answers with BUSY for
 * two seconds (its creator may be writing it) before taking it over: that is waited out. A lock
 * naming a dead process must be taken over at once. Returns the store and the ms waited. */
async function openAfterKill(directory) {
  for (let waited = 0; ; waited += 100) {
    try {
      return { store: await open(directory), waited };
    } catch (error) {
      if (error.code !== 'BUSY' || /^\d+\n/.test(readLock(directory)) || waited >= 5000) throw error;
      await sleep(100);
    }
  }
}

/** Stock SQLite's view of a copy of the store's files (the original stays as the writer left
 * it): its integrity check and how many steps it sees committed. */
function stockSqlite(directory) {
  const copy = tempDir();
  try {
    for (const file of readdirSync(directory)) {
      if (file.startsWith(`${NAME}.db`) && !file.endsWith('.lock')) copyFileSync(join(directory, file), join(copy, file));
    }
    const db = new Database(join(copy, `${NAME}.db`));
    try {
      const integrity = db.pragma('integrity_check', { simple: true });
      const row = db.prepare('SELECT revision FROM checkpoints WHERE checkpoint_id = ?').get(CHECKPOINT);
      return { integrity, n: row === undefined ? 0 : row.revision + 1 };
    } finally {
      db.close();
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

test('a writer killed mid-step keeps every acknowledged step whole, and no step in part', async () => {
  await init();
  const directory = tempDir();
  const rng = xorshift(seed);
  const plan = new Plan(seed);
  const tally = { acknowledged: 0, resent: 0, replayed: 0, relaxed: 0, inOpen: 0, waited: 0, ackLost: 0, integrity: 0 };
  const started = performance.now();
  let acked = null; // the last step acknowledged
  let found = 0; // the steps committed at the last check
  try {
    for (let cycle = 1; cycle <= cycles; cycle++) {
      const durability = rng.below(5) === 0 ? 'relaxed' : 'full';
      const wantedAcks = rng.below(MAX_ACKS + 1);
      // Half the writers to be killed before their first ack are killed in their open.
      const inOpen = wantedAcks === 0 && rng.below(2) === 0;
      const delayMs = rng.below((inOpen ? MAX_OPEN_DELAY_MS : MAX_DELAY_MS) + 1);
      const at = `cycle ${cycle} (seed ${seed}, ${durability}, ` +
        `${inOpen ? `in its open after ${delayMs} ms` : `${wantedAcks} acks + ${delayMs} ms`})`;
      if (durability === 'relaxed') tally.relaxed += 1;
      if (inOpen) tally.inOpen += 1;
      const run = await writeAndKill(directory, durability, acked, { wantedAcks, delayMs, inOpen });
      if (run.ready !== null) assert.equal(run.ready, found, `${at}: the writer found ${run.ready} steps, the check before it ${found}`);
      for (const { k, how } of run.acks) {
        const expected = acked === null ? 0 : acked + 1;
        assert.ok(k === expected || (k > expected && how === 'new'), `${at}: ack ${k} (${how}) after ${acked}`);
        if (how !== 'replayed') tally.acknowledged += 1;
        if (how !== 'new') tally[how] += 1;
        acked = k;
      }
      // A writer killed in its first open may have left no database yet.
      const stock = existsSync(join(directory, `${NAME}.db`)) ? stockSqlite(directory) : null;
      // Opened over the killed writer's lock file, which names a dead process.
      const { store, waited } = await openAfterKill(directory);
      tally.waited += waited;
      let n;
      try {
        assert.equal(store.persistence, 'file');
        n = committedSteps(store);
        assert.deepEqual(check(store, plan, n), [], `${at}: ${n} steps committed`);
      } finally {
        await store.close();
      }
      if (stock) {
        assert.equal(stock.integrity, 'ok', `${at}: integrity_check`);
        assert.equal(stock.n, n, `${at}: stock SQLite sees ${stock.n} steps, the store ${n}`);
        tally.integrity += 1;
      }
      const acknowledged = acked === null ? 0 : acked + 1;
      assert.ok(n >= found, `${at}: ${found} steps had committed, ${n} are left`);
      assert.ok(n >= acknowledged, `${at}: ${acknowledged} steps acknowledged, ${n} committed`);
      assert.ok(n <= Math.max(found, acknowledged) + 1, `${at}: ${n} steps committed, ${acknowledged} acknowledged`);
      tally.ackLost += n - Math.max(found, acknowledged);
      found = n;
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `node file crash cycles: ${cycles}, acknowledged steps: ${tally.acknowledged}, steps found: ${found} ` +
    `(seed ${seed}, ${seconds} s; relaxed cycles: ${tally.relaxed}, killed in open: ${tally.inOpen}` +
    `${tally.waited ? ` (${tally.waited} ms waiting out a lock naming nobody)` : ''}; re-sent steps applied: ${tally.resent}, ` +
    `replayed: ${tally.replayed}; steps committed with their ack lost: ${tally.ackLost}; ` +
    `integrity_check ok: ${tally.integrity})`,
  );
  assert.ok(tally.acknowledged > 0, 'no step was acknowledged');
});

// ----- the lock -----

test('two processes opening one store at once: one gets it, the other BUSY, also over a killed holder\'s lock', async () => {
  const directory = tempDir();
  const rng = xorshift(seed ^ 0x10c4);
  let killed = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      // Every third holder is killed holding the store: the next round races for its lock.
      const killHolder = round % 3 === 0;
      const pair = [start(['hold', directory, NAME]), start(['hold', directory, NAME])];
      try {
        await Promise.all(pair.map((p) => p.until((lines) => (lines.includes('ready') ? true : undefined))));
        // Both at once, or the second a millisecond or two later: each order of their steps occurs.
        const lag = rng.below(3);
        pair[0].child.stdin.write('go\n');
        if (lag > 0) await sleep(lag);
        pair[1].child.stdin.write('go\n');
        const said = await Promise.all(pair.map((p) => p.until((lines) => lines.find((l) => l === 'won' || l.startsWith('error ')))));
        const at = `round ${round}${round % 3 === 1 && round > 1 ? ' (over a killed holder\'s lock)' : ''}`;
        assert.deepEqual([...said].sort(), ['error BUSY', 'won'], `${at}: the two said ${JSON.stringify(said)}`);
        const holder = pair[said.indexOf('won')];
        if (killHolder) {
          await kill(holder);
          killed += 1;
          const lock = readLock(directory);
          assert.match(lock, new RegExp(`\\b${holder.child.pid}\\b`), `${at}: the lock file after the holder was killed: ${lock}`);
        } else {
          holder.child.stdin.write('close\n');
          await holder.until((lines) => (lines.includes('closed') ? true : undefined));
        }
        for (const p of pair) {
          const exit = await p.ended();
          if (p !== holder || !killHolder) assert.deepEqual(exit, { code: 0, signal: null }, `${at}: ${p.stderr}`);
        }
      } finally {
        await Promise.all(pair.map(kill));
      }
    }
    // After the last round the store opens here, and a holder killed before it left no harm.
    await init();
    const store = await open(directory);
    await store.close();
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  assert.ok(killed > 0);
});

test('a second open in the same process is BUSY at once, and the file opens again after close', async () => {
  await init();
  const directory = tempDir();
  try {
    const store = await open(directory, { durability: 'full' });
    assert.equal(store.persistence, 'file');
    store.append('wf', [{ type: 'custom', name: 'one', recordedAt: 1 }], 0);
    const lock = readLock(directory);
    assert.match(lock, new RegExp(`\\b${process.pid}\\b`), `the lock file while open: ${lock}`);
    const asked = performance.now();
    await assert.rejects(open(directory, { durability: 'relaxed' }), (error) => error.code === 'BUSY');
    assert.ok(performance.now() - asked < 1000, 'BUSY took a second or more');
    assert.equal(store.head('wf'), 1, 'the refused open changed the open store');
    await store.close();
    const again = await open(directory);
    try {
      assert.equal(again.head('wf'), 1);
      assert.equal(again.readHistory('wf').items[0].name, 'one');
    } finally {
      await again.close();
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

// A worker thread has a wasm instance of its own, but the pid of the process: the lock must
// still tell it that the file is held.
test('a worker thread opening a store this thread holds gets BUSY', async () => {
  await init();
  const directory = tempDir();
  try {
    const store = await open(directory);
    const worker = start(['hold', directory, NAME], { thread: true });
    try {
      await worker.until((lines) => (lines.includes('ready') ? true : undefined));
      worker.child.stdin.write('go\n');
      const said = await worker.until((lines) => lines.find((l) => l === 'won' || l.startsWith('error ')));
      assert.equal(said, 'error BUSY', 'a worker thread opened the file this thread holds');
    } finally {
      await kill(worker);
      await store.close();
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
