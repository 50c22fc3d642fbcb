// The page side of the browser crash test: runs a writer worker (src/crash-worker.js) and
// terminates it after a random number of acks plus a random short delay, cycle after cycle on
// one OPFS database. Each new worker first checks the store the terminated one left; a last
// worker checks the final state.
import { xorshift } from './crash-plan.js';
import { pageMedium } from './medium.js';

/** Most acks before a termination, and most milliseconds of delay after them. */
const MAX_ACKS = 6;
const MAX_DELAY_MS = 15;

/** How long one crash worker may take: a cycle normally takes well under a second. */
const WORKER_LIMIT_MS = 60_000;

/**
 * Runs a worker in `mode` ('write' or 'check'). Resolves to { checked, acks } once a writer is
 * terminated (after `wantedAcks` acks and `delay` ms) or the checker has reported, or to
 * { failed }.
 */
function runWorker(mode, seed, key, acked, wantedAcks = 0, delay = 0) {
  return new Promise((settle) => {
    const worker = new Worker(new URL('./crash-worker.js', import.meta.url), { type: 'module' });
    // A worker that never finishes (its open or a commit hung) fails the run, not the test's
    // time limit.
    const limit = setTimeout(() => {
      worker.terminate();
      settle({ failed: `the ${mode} worker did not finish within ${WORKER_LIMIT_MS} ms` });
    }, WORKER_LIMIT_MS);
    const resolve = (outcome) => {
      clearTimeout(limit);
      settle(outcome);
    };
    const run = { checked: null, acks: [] };
    let stopping = false;
    const stopAfter = (ms) => {
      stopping = true;
      setTimeout(() => {
        worker.terminate();
        resolve(run);
      }, ms);
    };
    worker.onmessage = ({ data }) => {
      if (data.failed) {
        worker.terminate();
        resolve({ failed: data.failed });
      } else if (data.checked) {
        run.checked = data.checked;
        if (mode === 'check') stopAfter(0);
        // No acks wanted: terminate it in its first commits.
        else if (wantedAcks === 0) stopAfter(delay);
      } else {
        run.acks.push(data);
        if (!stopping && run.acks.length >= wantedAcks) stopAfter(delay);
      }
    };
    worker.onerror = (event) => resolve({ failed: event.message ?? 'the worker did not start' });
    worker.postMessage({ mode, seed, key, acked, medium: pageMedium() });
  });
}

/** What a worker found, against what was known before: no committed or acknowledged step lost. */
function judge(report, cycle, checked, acked) {
  const acknowledged = acked === null ? 0 : acked + 1;
  const { n, problems } = checked;
  const at = (problem) => `after cycle ${cycle - 1}: ${problem}`;
  if (n < report.found) report.problems.push(at(`${report.found} steps had committed, ${n} are left`));
  if (n < acknowledged) report.problems.push(at(`${acknowledged} steps acknowledged, ${n} committed`));
  report.committedUnacknowledged += Math.max(0, n - Math.max(report.found, acknowledged));
  report.found = n;
  report.problems.push(...problems.map(at));
}

/** Counts a writer's acks, checking that they follow the last one (`acked`); returns the new last. */
function countAcks(report, cycle, acks, acked) {
  for (const { ack, how } of acks) {
    const expected = acked === null ? 0 : acked + 1;
    if (ack !== expected && !(ack > expected && how === 'new')) {
      report.problems.push(`cycle ${cycle}: ack ${ack} (${how}) after ${acked}`);
    }
    if (how !== 'replayed') report.acknowledged += 1;
    if (how !== 'new') report[how] += 1;
    acked = ack;
  }
  return acked;
}

/**
 * Runs `cycles` write-and-terminate cycles and a final check; resolves to the figures and the
 * problems found (it stops at the first cycle with a problem). With `key` (32 bytes as an
 * array) on another store, encrypted with it.
 */
export async function runCrashCycles(cycles, seed, key = null) {
  const rng = xorshift(seed);
  const report = {
    cycles: 0, acknowledged: 0, resent: 0, replayed: 0, found: 0, committedUnacknowledged: 0, problems: [],
  };
  let acked = null;
  for (let cycle = 1; cycle <= cycles + 1 && report.problems.length === 0; cycle++) {
    const mode = cycle <= cycles ? 'write' : 'check';
    const run = await runWorker(mode, seed, key, acked, rng.below(MAX_ACKS + 1), rng.below(MAX_DELAY_MS));
    if (run.failed || !run.checked) {
      report.problems.push(`cycle ${cycle}: the ${mode} worker failed: ${run.failed ?? 'no check'}`);
      break;
    }
    judge(report, cycle, run.checked, acked);
    if (mode === 'write') {
      report.cycles = cycle;
      acked = countAcks(report, cycle, run.acks, acked);
    }
  }
  return report;
}

/** The SQLite file header, which every page 1 of a plain database starts with. */
const SQLITE_MAGIC = new TextEncoder().encode('SQLite format 3\0');

/**
 * Whether the stored bytes of the store `name` (its OPFS pool directory's files, or its
 * IndexedDB database's records) hold SQLite's file header anywhere: a plain store's do, an
 * encrypted store's never.
 */
export async function holdsPlainHeader(name) {
  const chunks = [];
  const root = await navigator.storage?.getDirectory?.().catch(() => null);
  const dir = await root?.getDirectoryHandle(name).catch(() => null);
  const walk = async (handle) => {
    for await (const entry of handle.values()) {
      if (entry.kind === 'directory') await walk(entry);
      else chunks.push(new Uint8Array(await (await entry.getFile()).arrayBuffer()));
    }
  };
  if (dir) await walk(dir);
  if (((await indexedDB.databases?.()) ?? []).some((db) => db.name === `runstore:${name}`)) {
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open(`runstore:${name}`);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const collect = (value) => {
      if (ArrayBuffer.isView(value)) chunks.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      else if (value instanceof ArrayBuffer) chunks.push(new Uint8Array(value));
      else if (value && typeof value === 'object') for (const inner of Object.values(value)) collect(inner);
    };
    for (const store of db.objectStoreNames) {
      collect(await new Promise((resolve, reject) => {
        const request = db.transaction(store).objectStore(store).getAll();
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      }));
    }
    db.close();
  }
  return chunks.some((chunk) => {
    for (let i = 0; i + SQLITE_MAGIC.length <= chunk.length; i++) {
      if (SQLITE_MAGIC.every((byte, j) => chunk[i + j] === byte)) return true;
    }
    return false;
  });
}
