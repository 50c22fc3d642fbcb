// Time to a usable store, the official build: a fresh dedicated worker loads the module, its
// wasm, installs its sahpool VFS, opens a database, creates a table and inserts one row (the
// table as runstore's first commit writes a row). Posts when each phase ended, as
// startup-core.js does, then exits.
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';

const at = () => performance.timeOrigin + performance.now();
const loaded = at();

self.onmessage = async ({ data: { name } }) => {
  try {
    const sqlite3 = await sqlite3InitModule();
    const initialized = at();
    const pool = await sqlite3.installOpfsSAHPoolVfs({ name: 'startup-sahpool', directory: '.startup-sahpool' });
    const db = new pool.OpfsSAHPoolDb(`/${name}.db`);
    db.exec('PRAGMA journal_mode = WAL');
    const opened = at();
    db.exec('CREATE TABLE IF NOT EXISTS events (workflow_id TEXT, seq INTEGER, event TEXT, PRIMARY KEY (workflow_id, seq))');
    db.exec({ sql: 'INSERT INTO events VALUES (?, 1, ?)', bind: ['startup', '{"type":"custom","name":"first"}'] });
    const written = at();
    db.close();
    pool.unlink(`/${name}.db`);
    await pool.removeVfs();
    self.postMessage({ phases: { loaded, initialized, opened, written } });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
