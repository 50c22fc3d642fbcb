// The sides that run in Node beside runstore: the hand-written SQL on better-sqlite3 (memory,
// and a file), DBOS Transact on PostgreSQL and durably on its SQLite file. Each opens fresh
// storage, answers `{ runOne(workflowId), close() }` and names its settings in `settings`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteDialect } from 'kysely';
import { z } from 'zod';
import { createDurably, defineJob } from '@coji/durably';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { STEPS, stepBody } from './src/workload.js';
import { plainSide } from './src/plain.js';

/** better-sqlite3's statements as plain.js takes them: `run` answers the rows changed. */
function driver(db) {
  return {
    exec: (sql) => db.exec(sql),
    prepare(sql) {
      const statement = db.prepare(sql);
      return { run: (...params) => statement.run(...params).changes };
    },
  };
}

/** The SQLite that better-sqlite3 (and durably through it) runs. */
export const sqliteVersion = () => new Database(':memory:').prepare('SELECT sqlite_version() AS v').get().v;

function tempDir() {
  return mkdtempSync(join(tmpdir(), 'runstore-bench-workflow-'));
}

/** PRAGMAs that say how a SQLite file is written, as read back from the connection. */
function pragmas(db) {
  const read = (name) => db.pragma(name, { simple: true });
  const sync = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][read('synchronous')];
  return `journal_mode=${read('journal_mode')}, synchronous=${sync}`;
}

/** Hand-written SQL on better-sqlite3: `:memory:`, or a file in WAL mode with synchronous=FULL (each commit fsynced). */
export function betterSqlite(file) {
  const dir = file ? tempDir() : null;
  const db = new Database(file ? join(dir, 'plain.db') : ':memory:');
  if (file) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
  }
  const side = plainSide(driver(db));
  return {
    ...side,
    settings: `better-sqlite3 ${file ? 'file' : ':memory:'}, ${pragmas(db)}`,
    close() {
      db.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ----- durably -----

const durablyJob = defineJob({
  name: 'ten-steps',
  input: z.object({ workflowId: z.string() }),
  run: async (step, { workflowId }) => {
    let last = null;
    for (let i = 0; i < STEPS; i++) last = await step.run(`s${i}`, () => stepBody(workflowId, i));
    return last;
  },
});

/**
 * durably on a fresh SQLite file through better-sqlite3, set up as its documentation shows
 * (`new Database(file)` in kysely's SqliteDialect: SQLite's own defaults). Its worker takes
 * runs by polling the table: every `pollingMs` when idle (its default is 1,000 ms; 10 here, so
 * that the pick-up does not swamp ten small steps), `lanes` runs at once.
 */
export async function durably({ lanes, pollingMs = 10 }) {
  const dir = tempDir();
  const db = new Database(join(dir, 'durably.db'));
  const instance = createDurably({
    dialect: new SqliteDialect({ database: db }),
    pollingIntervalMs: pollingMs,
    maxConcurrentRuns: lanes,
    jobs: { tenSteps: durablyJob },
  });
  await instance.init();
  return {
    settings: `durably 0.15.0, better-sqlite3 file, ${pragmas(db)}, pollingIntervalMs ${pollingMs}, maxConcurrentRuns as many as run at once`,
    async runOne(workflowId) {
      const { output } = await instance.jobs.tenSteps.triggerAndWait({ workflowId });
      if (output?.step !== STEPS - 1) throw new Error(`durably returned ${JSON.stringify(output)}`);
    },
    async close() {
      await instance.stop();
      await instance.db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ----- DBOS Transact -----

const dbosFlow = DBOS.registerWorkflow(
  async (workflowId) => {
    let last = null;
    for (let i = 0; i < STEPS; i++) last = await DBOS.runStep(() => stepBody(workflowId, i), { name: `s${i}` });
    return last;
  },
  { name: 'tenSteps' },
);

let dbosLaunched = null;

/**
 * DBOS Transact on the PostgreSQL at `url` (its system database, created by DBOS on launch):
 * launched once per process (DBOS is a process-wide singleton), each workflow started in the
 * process with `DBOS.startWorkflow` and awaited through its handle.
 */
export async function dbos(url) {
  dbosLaunched ??= (async () => {
    DBOS.setConfig({ name: 'runstore-bench', systemDatabaseUrl: url, logLevel: 'error' });
    await DBOS.launch();
  })();
  await dbosLaunched;
  return {
    settings: 'DBOS Transact 5.3.0, system database on the PostgreSQL cluster',
    async runOne(workflowId) {
      const handle = await DBOS.startWorkflow(dbosFlow, { workflowID: workflowId })(workflowId);
      const result = await handle.getResult();
      if (result?.step !== STEPS - 1) throw new Error(`DBOS returned ${JSON.stringify(result)}`);
    },
    close() {},
  };
}

export async function shutdownDbos() {
  if (dbosLaunched) await DBOS.shutdown();
}
