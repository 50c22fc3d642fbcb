// The hand-written journal and ledger (plain.js) on the official SQLite wasm build
// (@sqlite.org/sqlite-wasm, oo1 API) in a dedicated worker, on OPFS through its sahpool VFS,
// set up as runstore sets up its files: WAL with exclusive locking, `synchronous` FULL for
// `full`, NORMAL for `relaxed`. One measurement per message, each on a fresh file.
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import { plainSide } from './plain.js';
import { measure } from './workload.js';

const ready = sqlite3InitModule().then(async (sqlite3) => ({
  sqlite3,
  pool: await sqlite3.installOpfsSAHPoolVfs({ name: 'bench-sahpool', directory: '.bench-sahpool', clearOnInit: true }),
}));

/** The oo1 API as plain.js takes it: `run` binds, steps, and answers the rows changed. */
function driver(db) {
  return {
    exec: (sql) => db.exec(sql),
    prepare(sql) {
      const statement = db.prepare(sql);
      return {
        run(...params) {
          statement.bind(params).stepReset();
          return db.changes();
        },
      };
    },
  };
}

self.onmessage = async ({ data: { id, durability, count, lanes, name } }) => {
  try {
    const { sqlite3, pool } = await ready;
    const file = `/${name}.db`;
    const db = new pool.OpfsSAHPoolDb(file);
    try {
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${durability === 'relaxed' ? 'NORMAL' : 'FULL'}`);
      const result = await measure(plainSide(driver(db)).runOne, { count, lanes, prefix: name });
      result.version = sqlite3.version.libVersion;
      self.postMessage({ id, result });
    } finally {
      db.close();
      pool.unlink(file);
    }
  } catch (error) {
    self.postMessage({ id, error: String(error?.stack ?? error) });
  }
};
