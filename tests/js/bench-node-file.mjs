// runstore/core on Node's file medium (`persistence: 'file'`) beside better-sqlite3 running the
// SQL a developer would write by hand for the same jobs, in one Node process, on files in a
// temporary directory on this machine's disk. Figures only, no assertions on speed.
//
// - W1-W5 of SPEC §5, driven by the same code as the browser benchmark against the official
//   SQLite wasm build (benches/official/src/workloads.js: its payloads, counts and checks), at
//   durability `full` beside synchronous=FULL and `relaxed` beside synchronous=NORMAL.
// - The native crate's own benchmark (`cargo bench --bench workloads -- file file-relaxed`):
//   a separate process, run after the Node figures so that it does not share the CPU with them.
// - LangGraph: RunStoreSaver on a file store beside SqliteSaver on a file, with the workload of
//   tests/langgraph/bench.mjs (put + putWrites, getTuple, list, a graph of 50 super-steps).
//
// Usage (scripts/bench-node-file.sh): node tests/js/bench-node-file.mjs [--scale 1] [--rounds 3]
//   [--durability full,relaxed] [--workloads W1,W2,W3,W4,W5] [--parts workloads,native,langgraph]
//   [--checkpoints 500] [--graph-runs 5] [--warmup 1000] [--plain-exclusive]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { init, RunStoreCore } from '../../js/core.js';
import { measure, WORKLOADS } from '../../benches/official/src/workloads.js';
import { SCHEMA } from '../../benches/official/src/plain-schema.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const langgraphApp = join(root, 'tests', 'langgraph');

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    durability: { type: 'string', default: 'full,relaxed' },
    workloads: { type: 'string', default: 'W1,W2,W3,W4,W5' },
    parts: { type: 'string', default: 'workloads,native,langgraph' },
    checkpoints: { type: 'string', default: '500' },
    'graph-runs': { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1000' },
    // runstore's file medium holds its database under locking_mode=EXCLUSIVE (no -shm file, the
    // WAL index in the heap); a developer's better-sqlite3 database does not. This flag gives
    // the plain side the same, to tell what that alone is worth.
    'plain-exclusive': { type: 'boolean', default: false },
  },
});
const SCALE = Number(values.scale);
const ROUNDS = Number(values.rounds);
const DURABILITIES = values.durability.split(',');
const WORKLOAD_KEYS = values.workloads.split(',');
const PARTS = new Set(values.parts.split(','));
/** The warm-up's scale: enough calls that V8 has both sides' JS and the store's wasm in its optimizing tier. */
const WARMUP_SCALE = 0.05;

for (const w of WORKLOAD_KEYS) if (!WORKLOADS[w]) throw new Error(`unknown workload ${w}`);

// better-sqlite3 is a dependency of tests/langgraph (SqliteSaver's driver), not of the package.
const requireFromApp = createRequire(join(langgraphApp, 'package.json'));
const Database = requireFromApp('better-sqlite3');

const dir = mkdtempSync(join(tmpdir(), 'runstore-bench-node-file-'));
const progress = (text) => process.stderr.write(`[bench-node-file] ${text}\n`);

// ---------------------------------------------------------------------------------------------
// The plain side: one table per job, prepared statements, JSON text, the head checked in the
// append's transaction. The same tables and statements as benches/official/src/plain.js (the
// browser's plain side), in better-sqlite3's API; methods named and answering as runstore's, so
// that workloads.js drives both sides with the same code.

class PlainStore {
  constructor(file, durability) {
    this.db = new Database(file);
    if (values['plain-exclusive']) this.db.pragma('locking_mode = EXCLUSIVE');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    this.db.exec(SCHEMA);
    // A level set explicitly holds in WAL mode (SQLITE_DEFAULT_WAL_SYNCHRONOUS replaces only the default).
    if (this.db.pragma('synchronous', { simple: true }) !== (durability === 'full' ? 2 : 1)) throw new Error('plain side: synchronous not as set');
    const { db } = this;
    const head = db.prepare('SELECT coalesce(max(seq), 0) FROM events WHERE workflow_id = ?').pluck();
    const insertEvent = db.prepare('INSERT INTO events (workflow_id, seq, event) VALUES (?, ?, ?)');
    this.history = db.prepare('SELECT seq, event FROM events WHERE workflow_id = ? ORDER BY seq LIMIT 1001');
    const insertOutbox = db.prepare(`INSERT OR IGNORE INTO outbox (dispatch_key, workflow_id, activity_type, input, status, visible_after)
      VALUES (?, ?, ?, ?, 'pending', ?)`);
    this.claim = db.prepare(`UPDATE outbox SET status = 'claimed', claimed_at = @now
      WHERE dispatch_key IN (
        SELECT dispatch_key FROM outbox WHERE status = 'pending' AND visible_after <= @now
        ORDER BY visible_after LIMIT @limit)
      RETURNING dispatch_key, workflow_id, activity_type, input, visible_after`);
    const complete = db.prepare("UPDATE outbox SET status = 'done' WHERE dispatch_key = ? AND status = 'claimed'");
    this.createCheckpoint = db.prepare('INSERT INTO checkpoints (checkpoint_id, revision, state, updated_at) VALUES (?, ?, ?, ?)');
    this.swapCheckpoint = db.prepare(`UPDATE checkpoints SET revision = @revision, state = @state, updated_at = @updatedAt
      WHERE checkpoint_id = @id AND revision = @expected`);

    // BEGIN IMMEDIATE (`.immediate`): the head read and the inserts under one write lock.
    const append = db.transaction((workflowId, texts, expectedSeq) => {
      let seq = head.get(workflowId);
      if (seq !== expectedSeq) throw new Error(`plain side: head ${seq}, expected ${expectedSeq}`);
      for (const text of texts) insertEvent.run(workflowId, ++seq, text);
      return seq;
    });
    this.appendTx = append.immediate;
    this.insertOutboxTx = db.transaction((rows) => {
      let inserted = 0;
      for (const row of rows) inserted += insertOutbox.run(row.dispatchKey, row.workflowId, row.activityType, row.input, row.visibleAfter).changes;
      return inserted;
    }).immediate;
    this.completeTx = db.transaction((claims) => {
      for (const { dispatchKey } of claims) {
        if (complete.run(dispatchKey).changes !== 1) throw new Error(`plain side: outbox row ${dispatchKey} is not claimed`);
      }
    }).immediate;
  }

  close() {
    this.db.close();
  }

  append(workflowId, events, expectedSeq) {
    return this.appendTx(workflowId, events.map((event) => JSON.stringify(event)), expectedSeq);
  }

  /** The events parsed, each with its seq, as an app would use them (as plain.js reads them). */
  readHistory(workflowId) {
    const items = this.history.all(workflowId).map((row) => {
      const event = JSON.parse(row.event);
      event.seq = row.seq;
      return event;
    });
    let nextCursor = null;
    if (items.length > 1000) {
      items.length = 1000;
      nextCursor = String(items[999].seq);
    }
    return { items, nextCursor };
  }

  insertOutbox(rows) {
    return this.insertOutboxTx(rows);
  }

  /** One statement, so its own transaction; with no claim token, a row's key is what completes it. */
  claimOutbox(now, limit) {
    return this.claim.all({ now, limit }).map((row) => ({
      dispatchKey: row.dispatch_key,
      workflowId: row.workflow_id,
      activityType: row.activity_type,
      input: row.input,
      visibleAfter: row.visible_after,
      claimToken: 0,
    }));
  }

  completeOutboxBatch(claims) {
    this.completeTx(claims);
  }

  /** One statement each, so each its own transaction, as a developer would leave it. */
  compareAndSwapCheckpoint(checkpoint, expectedRevision) {
    const state = JSON.stringify(checkpoint.state);
    if (expectedRevision === null) {
      this.createCheckpoint.run(checkpoint.checkpointId, checkpoint.revision, state, checkpoint.updatedAt);
      return;
    }
    const { changes } = this.swapCheckpoint.run({
      id: checkpoint.checkpointId,
      expected: expectedRevision,
      revision: checkpoint.revision,
      state,
      updatedAt: checkpoint.updatedAt,
    });
    if (changes !== 1) throw new Error(`plain side: checkpoint ${checkpoint.checkpointId} revision`);
  }
}

// ---------------------------------------------------------------------------------------------
// W1-W5

/** Removes a database and its WAL (and -shm): every workload starts on a new file, and the disk does not fill. */
function removeDatabase(file) {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
}

const SIDES = {
  runstore: {
    async open(name, durability) {
      return RunStoreCore.open(name, { persistence: 'file', directory: dir, durability });
    },
    async close(store, name) {
      await store.close();
      removeDatabase(join(dir, `${name}.db`));
    },
  },
  plain: {
    async open(name, durability) {
      return new PlainStore(join(dir, `${name}.db`), durability);
    },
    async close(store, name) {
      store.close();
      removeDatabase(join(dir, `${name}.db`));
    },
  },
};

/** One workload on a new database of `side`: { count, ms } of the timed part (workloads.js `measure`). */
function runWorkload(side, w, durability, scale, name) {
  const { open, close } = SIDES[side];
  return measure(w, scale, () => open(name, durability), (store) => close(store, name));
}

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const spread = (list) =>
  list.length > 1 ? ` ±${(((Math.max(...list) - Math.min(...list)) / 2 / median(list)) * 100).toFixed(0)}%` : '';
const opsPerSecond = ({ count, ms }) => (count * 1000) / ms;
const format = (value) => (value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US'));

/**
 * Each workload on both sides, `ROUNDS` times, each on a new file. The two sides run one after
 * the other on the same workload, and which goes first alternates by round: a load that comes
 * and goes on a shared machine falls on both, and neither always finds the disk freshly flushed.
 */
async function workloads(durability) {
  progress(`W1-W5, ${durability}: warm-up`);
  for (const w of WORKLOAD_KEYS) {
    for (const side of Object.keys(SIDES)) await runWorkload(side, w, durability, WARMUP_SCALE, `warm-${side}-${w}`);
  }
  const results = Object.fromEntries(WORKLOAD_KEYS.map((w) => [w, { runstore: [], plain: [] }]));
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? ['runstore', 'plain'] : ['plain', 'runstore'];
    for (const w of WORKLOAD_KEYS) {
      for (const side of order) {
        const result = await runWorkload(side, w, durability, SCALE, `${side}-${durability}-${w}-${round}`);
        results[w][side].push(result);
        progress(`${durability} round ${round + 1}/${ROUNDS} ${w} ${side}: ${format(opsPerSecond(result))}/s`);
      }
    }
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// The native crate's benchmark, as it prints it

/**
 * Runs benches/workloads.rs on its file media (`file` is durability full, `file-relaxed`
 * relaxed), in a process of its own, at the SPEC's counts (it has no scale). Its plain side is
 * rusqlite running runstore's own SQL, not the hand-written SQL above. Returns the table rows
 * by medium and workload key, and its output as printed.
 */
function nativeBench() {
  progress('native: cargo bench --bench workloads -- file file-relaxed (a separate process; builds first if needed)');
  const run = spawnSync('cargo', ['bench', '--bench', 'workloads', '--', 'file', 'file-relaxed'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 << 20,
  });
  if (run.status !== 0) {
    return { error: `cargo bench exited with ${run.status ?? run.signal}: no native figures (its messages are on stderr)`, output: run.stdout ?? '' };
  }
  const rows = {};
  let medium = null;
  for (const line of run.stdout.split('\n')) {
    const title = /^native, (file(?:-relaxed)?)$/.exec(line.trim());
    if (title) medium = title[1] === 'file' ? 'full' : 'relaxed';
    // | W1 single appends | appends | 5000 | store/s | plain/s | ratio |, the plain W3 first
    const row = /^\| (W\d) ([^|]*)\|[^|]*\|[^|]*\| (\d+) \| (\d+) \| ([\d.]+) \|$/.exec(line.trim());
    if (medium && row && !rows[medium]?.[row[1]]) {
      rows[medium] ??= {};
      rows[medium][row[1]] = { store: Number(row[3]), plain: Number(row[4]), ratio: Number(row[5]) };
    }
  }
  return { rows, output: run.stdout };
}

// ---------------------------------------------------------------------------------------------
// LangGraph

/**
 * js/langgraph.js imports @langchain/langgraph-checkpoint, which the repository's root does not
 * install: tests/langgraph does. This hook resolves every @langchain/* import from outside that
 * app as if it came from inside it, so that the saver, the graph and SqliteSaver share one copy
 * of LangGraph (its classes are checked with instanceof).
 */
function resolveLangChainFromApp() {
  const appUrl = pathToFileURL(join(langgraphApp, 'package.json')).href;
  const appDir = pathToFileURL(`${langgraphApp}/`).href;
  const hooks = `
    export async function resolve(specifier, context, next) {
      if (specifier.startsWith('@langchain/') && !context.parentURL?.startsWith(${JSON.stringify(appDir)})) {
        return next(specifier, { ...context, parentURL: ${JSON.stringify(appUrl)} });
      }
      return next(specifier, context);
    }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}

/** The saver figures of tests/langgraph/bench.mjs, on files, at `durability`. */
async function langgraph(durability) {
  const { RunStoreSaver } = await import('../../js/langgraph-node.js');
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  const workload = await import(pathToFileURL(join(langgraphApp, 'src', 'bench-workload.js')).href);
  const { saverWorkload, graphWorkload } = workload;
  const n = Number(values.checkpoints);
  const graphRuns = Number(values['graph-runs']);
  const warmup = Number(values.warmup);

  const name = `saver-${durability}`;
  const store = await RunStoreCore.open(name, { persistence: 'file', directory: dir, durability });
  const runstore = new RunStoreSaver(store);
  const sqlite = SqliteSaver.fromConnString(join(dir, `sqlite-saver-${durability}.db`));
  // SqliteSaver sets journal_mode=WAL on its first call and leaves synchronous alone, and
  // better-sqlite3's SQLite is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1: as shipped it runs
  // at NORMAL, which is `relaxed`'s promise. At `full` it is given FULL, so that both sides
  // flush at every commit; the `relaxed` table is SqliteSaver as shipped.
  await sqlite.getTuple({ configurable: { thread_id: 'setup' } });
  sqlite.db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  const sqliteSettings = `journal_mode=${sqlite.db.pragma('journal_mode', { simple: true })}, synchronous=${['OFF', 'NORMAL', 'FULL', 'EXTRA'][sqlite.db.pragma('synchronous', { simple: true })]}`;
  try {
    // Both warmed before either is measured: the JIT, LangGraph's own code (shared), the store's wasm.
    progress(`LangGraph, ${durability}: warm-up`);
    for (const saver of [runstore, sqlite]) {
      await saverWorkload(saver, warmup);
      await graphWorkload(saver, 1);
    }
    const [storePages, sqlitePages] = [workload.storePages(store), workload.sqliteSaverPages(sqlite)];
    const measureSaver = (saver, pages) => workload.measureSaver(saver, pages, n, graphRuns);
    const figures = { runstore: [], sqlite: [] };
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? ['runstore', 'sqlite'] : ['sqlite', 'runstore'];
      for (const side of order) {
        figures[side].push(side === 'runstore' ? await measureSaver(runstore, storePages) : await measureSaver(sqlite, sqlitePages));
        progress(`LangGraph ${durability} round ${round + 1}/${ROUNDS} ${side}: put ${format(figures[side].at(-1).put)}/s`);
      }
    }
    return { figures, sqliteSettings };
  } finally {
    sqlite.db.close();
    await store.close();
  }
}

// ---------------------------------------------------------------------------------------------

const FS_TYPES = { 0xef53: 'ext2/3/4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x01021994: 'tmpfs (memory, not a disk)', 0x794c7630: 'overlayfs' };
const fsType = statfsSync(dir).type;

await init();
const output = [];
const print = (line = '') => output.push(line);
try {
  const nodeResults = {};
  if (PARTS.has('workloads')) for (const durability of DURABILITIES) nodeResults[durability] = await workloads(durability);
  const saverResults = {};
  if (PARTS.has('langgraph')) {
    resolveLangChainFromApp();
    for (const durability of DURABILITIES) saverResults[durability] = await langgraph(durability);
  }
  const native = PARTS.has('native') ? nativeBench() : null;

  print(`\nNode ${process.versions.node}, files in ${dir} (${FS_TYPES[fsType] ?? `file system 0x${fsType.toString(16)}`}), better-sqlite3 ${requireFromApp('better-sqlite3/package.json').version} (SQLite ${new Database(':memory:').prepare('SELECT sqlite_version()').pluck().get()})`);
  if (PARTS.has('workloads')) {
    print(`\nW1-W5 (SPEC §5, scale ${SCALE}): runstore/core \`persistence: 'file'\` beside better-sqlite3 with hand-written SQL (WAL${values['plain-exclusive'] ? ', locking_mode=EXCLUSIVE' : ''}, synchronous=FULL at \`full\`, NORMAL at \`relaxed\`), in one Node process, ops/s as medians of ${ROUNDS} rounds (± half the spread), the ratio the median of each round's runstore ÷ better-sqlite3.`);
    if (native) print(`Native: benches/workloads.rs, the crate's SqliteStore on a file at the SPEC's counts, beside rusqlite running the store's own SQL, one run, in a separate process (cargo bench).`);
    const nativeHeads = native ? ' native store ops/s | native ÷ runstore wasm |' : '';
    print(`\n| durability | workload | unit | runstore ops/s | better-sqlite3 ops/s | runstore ÷ better-sqlite3 |${nativeHeads}`);
    print(`|---|---|---|---:|---:|---:|${native ? '---:|---:|' : ''}`);
    for (const durability of DURABILITIES) {
      for (const w of WORKLOAD_KEYS) {
        const { runstore, plain } = nodeResults[durability][w];
        const rs = runstore.map(opsPerSecond);
        const pl = plain.map(opsPerSecond);
        const ratio = median(rs.map((value, i) => value / pl[i])).toFixed(2);
        let nativeCells = '';
        if (native) {
          const figure = native.rows?.[durability]?.[w];
          nativeCells = figure ? ` ${format(figure.store)} | ${(figure.store / median(rs)).toFixed(2)} |` : ' – | – |';
        }
        print(`| ${durability} | ${WORKLOADS[w].title} | ${WORKLOADS[w].unit} | ${format(median(rs))}${spread(rs)} | ${format(median(pl))}${spread(pl)} | ${ratio} |${nativeCells}`);
      }
    }
  }
  if (native) {
    print('\nThe native benchmark as it printed itself (cargo bench --bench workloads -- file file-relaxed, a separate process):');
    print(native.error ?? '');
    print(native.output.trimEnd());
  }
  if (PARTS.has('langgraph')) {
    print(`\nLangGraph savers on files: RunStoreSaver (runstore/core \`persistence: 'file'\`) beside SqliteSaver (better-sqlite3), ${values.checkpoints} checkpoints on one thread, ${values['graph-runs']} graph runs, after a warm-up of ${values.warmup} checkpoints and 1 graph run, medians of ${ROUNDS} rounds`);
    const rows = [
      ['put + putWrites /s', 'put'],
      ['getTuple by id /s', 'getTuple'],
      ['getTuple latest /s', 'latest'],
      ['list, limit 10 /s', 'list'],
      ['graph of 50 super-steps, runs/s', 'graphRuns'],
      ['bytes per checkpoint', 'bytesPerCheckpoint'],
    ];
    for (const durability of DURABILITIES) {
      const { figures, sqliteSettings } = saverResults[durability];
      print(`\n${durability}: SqliteSaver at ${sqliteSettings}`);
      print('| | runstore | SqliteSaver | runstore ÷ SqliteSaver |');
      print('|---|---:|---:|---:|');
      for (const [label, key] of rows) {
        const rs = figures.runstore.map((f) => f[key]);
        const sq = figures.sqlite.map((f) => f[key]);
        const ratio = median(rs.map((value, i) => value / sq[i])).toFixed(2);
        print(`| ${label} | ${format(median(rs))}${spread(rs)} | ${format(median(sq))}${spread(sq)} | ${ratio} |`);
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(output.join('\n'));
