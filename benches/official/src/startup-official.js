// Time to a usable store, the official build: a fresh dedicated worker loads the module, its
// wasm, installs its sahpool VFS, opens a database (new, or the one an earlier visit left),
// makes its table if missing and inserts one row. Posts when each phase ended, as
// startup-core.js does, then exits. Each store has its own pool directory, as each of
// runstore's stores does: a first visit creates the pool's files, as an app's first visit does.
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';

const at = () => performance.timeOrigin + performance.now();
const loaded = at();

self.onmessage = async ({ data: { name, keep } }) => {
  try {
    const sqlite3 = await sqlite3InitModule();
    const initialized = at();
    const pool = await sqlite3.installOpfsSAHPoolVfs({ name: 'startup-sahpool', directory: `.startup-${name}` });
    const db = new pool.OpfsSAHPoolDb(`/${name}.db`);
    db.exec('PRAGMA journal_mode = WAL');
    const opened = at();
    db.exec('CREATE TABLE IF NOT EXISTS events (workflow_id TEXT, seq INTEGER, event TEXT, PRIMARY KEY (workflow_id, seq))');
    db.exec({ sql: 'INSERT OR REPLACE INTO events VALUES (?, ?, ?)', bind: ['startup', keep ? 1 : 2, '{"type":"custom","name":"visit"}'] });
    const written = at();
    db.close();
    // A first visit leaves its pool for the returning one, which removes it.
    if (!keep) await pool.removeVfs();
    self.postMessage({ phases: { loaded, initialized, opened, written } });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
