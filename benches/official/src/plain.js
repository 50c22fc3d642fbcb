// The SQL an app developer would write by hand for the same jobs, on the official SQLite
// WebAssembly build (oo1 API, prepared statements): a table per job with its primary key and
// the one index its query needs, JSON text columns, no status projection, no claim tokens, no
// attempts or dead letters, no request log. Same PRAGMAs as the other sides (WAL with exclusive
// locking on OPFS, `synchronous` per setup). Its methods have the names and results of
// runstore's, so that workloads.js drives it with the same code; history reads JSON.parse each
// event, as an app would.
import { historyPage, loadSqlite3, sahPool } from './official.js';
import { SCHEMA } from './plain-schema.js';

const STATEMENTS = {
  head: 'SELECT coalesce(max(seq), 0) FROM events WHERE workflow_id = ?',
  insertEvent: 'INSERT INTO events (workflow_id, seq, event) VALUES (?, ?, ?)',
  history: 'SELECT seq, event FROM events WHERE workflow_id = ? ORDER BY seq LIMIT 1001',
  insertOutbox: `INSERT OR IGNORE INTO outbox (dispatch_key, workflow_id, activity_type, input, status, visible_after)
    VALUES (?, ?, ?, ?, 'pending', ?)`,
  claim: `UPDATE outbox SET status = 'claimed', claimed_at = ?1
    WHERE dispatch_key IN (
      SELECT dispatch_key FROM outbox WHERE status = 'pending' AND visible_after <= ?1
      ORDER BY visible_after LIMIT ?2)
    RETURNING dispatch_key, workflow_id, activity_type, input, visible_after`,
  complete: "UPDATE outbox SET status = 'done' WHERE dispatch_key = ? AND status = 'claimed'",
  createCheckpoint: 'INSERT INTO checkpoints (checkpoint_id, revision, state, updated_at) VALUES (?, ?, ?, ?)',
  swapCheckpoint: `UPDATE checkpoints SET revision = ?3, state = ?4, updated_at = ?5
    WHERE checkpoint_id = ?1 AND revision = ?2`,
  begin: 'BEGIN IMMEDIATE',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
};

export class PlainStore {
  /** Opens `file` for `setup` ("memory", "opfs-full" or "opfs-relaxed"), as OfficialStore does. */
  static async open(setup, file) {
    const sqlite3 = await loadSqlite3();
    const db = setup === 'memory' ? new sqlite3.oo1.DB(':memory:') : new (await sahPool()).OpfsSAHPoolDb(file);
    if (setup !== 'memory') {
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA journal_mode = WAL');
    }
    db.exec(`PRAGMA synchronous = ${setup === 'opfs-relaxed' ? 'NORMAL' : 'FULL'}`);
    db.exec(SCHEMA);
    return new PlainStore(db, sqlite3.capi);
  }

  #db;
  #capi;
  #s = {};

  constructor(db, capi) {
    this.#db = db;
    this.#capi = capi;
    for (const [name, sql] of Object.entries(STATEMENTS)) this.#s[name] = db.prepare(sql);
  }

  close() {
    for (const stmt of Object.values(this.#s)) stmt.finalize();
    this.#db.close();
  }

  #transaction(write) {
    this.#s.begin.stepReset();
    try {
      const result = write();
      this.#s.commit.stepReset();
      return result;
    } catch (error) {
      if (!this.#capi.sqlite3_get_autocommit(this.#db.pointer)) this.#s.rollback.stepReset();
      throw error;
    }
  }

  append(workflowId, events, expectedSeq) {
    const texts = events.map((event) => JSON.stringify(event));
    return this.#transaction(() => {
      const head = this.#s.head.bind([workflowId]);
      head.step();
      let seq = head.get(0);
      head.reset();
      if (seq !== expectedSeq) throw new Error(`plain side: head ${seq}, expected ${expectedSeq}`);
      for (const text of texts) this.#s.insertEvent.bind([workflowId, ++seq, text]).stepReset();
      return seq;
    });
  }

  readHistory(workflowId) {
    return historyPage(this.#s.history.bind([workflowId]), (text) => text);
  }

  insertOutbox(rows) {
    return this.#transaction(() => {
      let inserted = 0;
      for (const row of rows) {
        this.#s.insertOutbox.bind([row.dispatchKey, row.workflowId, row.activityType, row.input, row.visibleAfter]).stepReset();
        inserted += this.#db.changes();
      }
      return inserted;
    });
  }

  /** The claimed rows; with no claim token, a row's key is what completes it. */
  claimOutbox(now, limit) {
    return this.#transaction(() => {
      const claim = this.#s.claim.bind([now, limit]);
      const rows = [];
      while (claim.step()) {
        rows.push({
          dispatchKey: claim.get(0),
          workflowId: claim.get(1),
          activityType: claim.get(2),
          input: claim.get(3),
          visibleAfter: claim.get(4),
          claimToken: 0,
        });
      }
      claim.reset();
      return rows;
    });
  }

  #completeIn(dispatchKey) {
    this.#s.complete.bind([dispatchKey]).stepReset();
    if (this.#db.changes() !== 1) throw new Error(`plain side: outbox row ${dispatchKey} is not claimed`);
  }

  completeOutbox(dispatchKey) {
    this.#transaction(() => this.#completeIn(dispatchKey));
  }

  completeOutboxBatch(claims) {
    this.#transaction(() => {
      for (const claim of claims) this.#completeIn(claim.dispatchKey);
    });
  }

  compareAndSwapCheckpoint(checkpoint, expectedRevision) {
    const state = JSON.stringify(checkpoint.state);
    this.#transaction(() => {
      if (expectedRevision === null) {
        this.#s.createCheckpoint.bind([checkpoint.checkpointId, checkpoint.revision, state, checkpoint.updatedAt]).stepReset();
      } else {
        this.#s.swapCheckpoint
          .bind([checkpoint.checkpointId, expectedRevision, checkpoint.revision, state, checkpoint.updatedAt])
          .stepReset();
        if (this.#db.changes() !== 1) throw new Error(`plain side: checkpoint ${checkpoint.checkpointId} revision`);
      }
    });
  }
}
