// The official SQLite WebAssembly build (@sqlite.org/sqlite-wasm, oo1 API, prepared
// statements) running the SQL runstore runs for each workload, on a database set up as runstore
// sets up its own: the same PRAGMAs (src/sqlite/mod.rs `configure`), incremental auto-vacuum,
// then a new store's schema (src/sqlite/new_store.sql, what every migration leaves) in one
// IMMEDIATE transaction. Its methods have the names and results of runstore's, so that
// workloads.js drives both sides with the same code.
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import NEW_STORE from '../../../src/sqlite/new_store.sql?raw';

/** The schema version a new store gets: one per migration file (schema.sql, schema_N.sql). */
const SCHEMA_VERSION = Object.keys(import.meta.glob('../../../src/sqlite/schema*.sql', { query: '?raw', eager: true }))
  .filter((path) => /\/schema(_\d+)?\.sql$/.test(path)).length;

/** The event encoding's version byte (EVENT_VERSION in src/model/journal.rs). */
const EVENT_VERSION = 1;

const SELECT_SUMMARY =
  'SELECT workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at FROM workflows WHERE workflow_id = ?1';
const INSERT_EVENT = 'INSERT INTO events (workflow_id, seq, kind, recorded_at, event) VALUES (?1, ?2, ?3, ?4, ?5)';
const UPSERT_WORKFLOW = `INSERT INTO workflows (workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
  ON CONFLICT (workflow_id) DO UPDATE SET head = excluded.head, status = excluded.status,
    workflow_type = excluded.workflow_type, run_id = excluded.run_id,
    started_at = excluded.started_at, closed_at = excluded.closed_at,
    updated_at = excluded.updated_at`;
// The store's read_history with the default page of 1000 (one more row is asked for the cursor).
const SELECT_HISTORY = 'SELECT seq, event FROM events WHERE workflow_id = ? AND seq >= ? ORDER BY seq LIMIT ?';
const INSERT_OUTBOX = `INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
    status, attempt, visible_after, run_id, namespace, task_queue, node, max_attempts)
  VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?11, ?12)
  ON CONFLICT (dispatch_key) DO NOTHING`;
const NEXT_TOKEN = 'SELECT last_token FROM outbox_claim_counter WHERE id = 1';
const CLAIM = `UPDATE outbox SET status = 'claimed', claimed_at = ?1, claim_token = ?7
  WHERE dispatch_key IN (
    SELECT dispatch_key FROM outbox
    WHERE status = 'pending' AND visible_after <= ?1
      AND workflow_id NOT IN (SELECT value FROM json_each(?3))
      AND (?4 IS NULL OR namespace = ?4)
      AND (?5 IS NULL OR task_queue = ?5)
      AND (?6 IS NULL OR node = ?6)
    ORDER BY visible_after, dispatch_key
    LIMIT ?2)
  RETURNING dispatch_key, workflow_id, ordinal, activity_type, input, status,
    attempt, visible_after, claimed_at, run_id, namespace, task_queue, node, claim_token,
    max_attempts, dead_reason`;
const SET_TOKEN = 'UPDATE outbox_claim_counter SET last_token = ?1 WHERE id = 1';
const COMPLETE = `UPDATE outbox SET status = 'done'
  WHERE dispatch_key = ?1 AND claim_token = ?2 AND status IN ('pending', 'claimed')
  RETURNING status`;
const INSERT_CHECKPOINT = `INSERT INTO checkpoints (checkpoint_id, run_id, revision, state, updated_at)
  VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`;
const UPDATE_CHECKPOINT = `UPDATE checkpoints SET run_id = ?2, revision = ?3, state = ?4, updated_at = ?5
  WHERE checkpoint_id = ?1 AND revision = ?3 - 1`;

let sqlite3Promise = null;
/** The official module, loaded once per worker. */
export function loadSqlite3() {
  sqlite3Promise ??= sqlite3InitModule();
  return sqlite3Promise;
}

let poolPromise = null;
/** The official sahpool VFS, in a directory of its own (runstore's pools are beside it). */
export async function sahPool() {
  const sqlite3 = await loadSqlite3();
  poolPromise ??= sqlite3.installOpfsSAHPoolVfs({
    name: 'official-sahpool',
    directory: '.official-sahpool',
    clearOnInit: true,
  });
  return poolPromise;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The event as runstore stores it: its version byte, then its JSON. */
function encodeEvent(event) {
  const json = encoder.encode(JSON.stringify(event));
  const blob = new Uint8Array(json.length + 1);
  blob[0] = EVENT_VERSION;
  blob.set(json, 1);
  return blob;
}

function conflict(what) {
  return new Error(`official side: ${what}`);
}

/**
 * The first page of a history as the store's readHistory answers it, from a statement bound to
 * select `seq, event` (at most 1001 rows): each event parsed from `eventText(column)`, and a
 * cursor when a 1001st row says there is more.
 */
export function historyPage(stmt, eventText) {
  const items = [];
  while (stmt.step()) {
    const event = JSON.parse(eventText(stmt.get(1)));
    event.seq = stmt.get(0);
    items.push(event);
  }
  stmt.reset();
  let nextCursor = null;
  if (items.length > 1000) {
    items.length = 1000;
    nextCursor = String(items[999].seq);
  }
  return { items, nextCursor };
}

export class OfficialStore {
  /**
   * Opens `file` for `setup`: "memory", "opfs-full" (synchronous=FULL) or "opfs-relaxed"
   * (synchronous=NORMAL); OPFS through the sahpool VFS with WAL and exclusive locking.
   */
  static async open(setup, file) {
    const sqlite3 = await loadSqlite3();
    let db;
    if (setup === 'memory') {
      db = new sqlite3.oo1.DB(':memory:');
    } else {
      const pool = await sahPool();
      db = new pool.OpfsSAHPoolDb(file);
    }
    const store = new OfficialStore(db, sqlite3.capi);
    store.#configure(setup);
    store.#migrate();
    store.#prepare();
    return store;
  }

  #db;
  #capi;
  #statements = [];

  constructor(db, capi) {
    this.#db = db;
    this.#capi = capi;
  }

  #configure(setup) {
    const db = this.#db;
    if (setup !== 'memory') db.exec('PRAGMA locking_mode = EXCLUSIVE');
    db.exec('PRAGMA foreign_keys = ON');
    if (setup !== 'memory') {
      const mode = db.selectValue('PRAGMA journal_mode = WAL');
      if (String(mode).toLowerCase() !== 'wal') throw conflict(`journal_mode WAL refused: ${mode}`);
    }
    db.exec(`PRAGMA synchronous = ${setup === 'opfs-relaxed' ? 'NORMAL' : 'FULL'}`);
    db.exec('PRAGMA journal_size_limit = 4194304');
  }

  #migrate() {
    const db = this.#db;
    db.exec('PRAGMA auto_vacuum = INCREMENTAL; VACUUM;');
    db.transaction('IMMEDIATE', () => {
      db.exec(NEW_STORE);
      db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    });
  }

  #prepare() {
    const prepare = (sql) => {
      const stmt = this.#db.prepare(sql);
      this.#statements.push(stmt);
      return stmt;
    };
    this.selectSummary = prepare(SELECT_SUMMARY);
    this.insertEvent = prepare(INSERT_EVENT);
    this.upsertWorkflow = prepare(UPSERT_WORKFLOW);
    this.selectHistory = prepare(SELECT_HISTORY);
    this.insertOutboxRow = prepare(INSERT_OUTBOX);
    this.nextToken = prepare(NEXT_TOKEN);
    this.claim = prepare(CLAIM);
    this.setToken = prepare(SET_TOKEN);
    this.complete = prepare(COMPLETE);
    this.insertCheckpoint = prepare(INSERT_CHECKPOINT);
    this.updateCheckpoint = prepare(UPDATE_CHECKPOINT);
    this.begin = prepare('BEGIN IMMEDIATE');
    this.commit = prepare('COMMIT');
    this.rollback = prepare('ROLLBACK');
  }

  /**
   * Runs `write` in an IMMEDIATE transaction, as oo1's `db.transaction('IMMEDIATE', ...)` does,
   * but through prepared statements rather than `exec`, which prepares its SQL at every call:
   * the official side gets the cheapest form the API offers.
   */
  #transaction(write) {
    this.begin.stepReset();
    try {
      const result = write();
      this.commit.stepReset();
      return result;
    } catch (error) {
      // A failed COMMIT or statement may have ended the transaction already.
      if (!this.#capi.sqlite3_get_autocommit(this.#db.pointer)) this.rollback.stepReset();
      throw error;
    }
  }

  close() {
    for (const stmt of this.#statements) stmt.finalize();
    this.#statements = [];
    this.#db.close();
  }

  append(workflowId, events, expectedSeq) {
    const blobs = events.map(encodeEvent);
    return this.#transaction(() => {
      const summary = this.selectSummary.bind([workflowId]);
      const head = summary.step() ? summary.get(1) : 0;
      summary.reset();
      if (head !== expectedSeq) throw conflict(`head ${head}, expected ${expectedSeq}`);
      let seq = head;
      let updatedAt = 0;
      for (let i = 0; i < events.length; i++) {
        seq += 1;
        updatedAt = events[i].recordedAt;
        this.insertEvent.bind([workflowId, seq, events[i].name, updatedAt, blobs[i]]).stepReset();
      }
      this.upsertWorkflow.bind([workflowId, seq, 'pending', null, null, null, null, updatedAt]).stepReset();
      return seq;
    });
  }

  /** The first page of a history (at most 1000 events), each event decoded from its JSON. */
  readHistory(workflowId) {
    return historyPage(this.selectHistory.bind([workflowId, 0, 1001]), (stored) =>
      decoder.decode(stored.subarray(1)),
    );
  }

  insertOutbox(rows) {
    return this.#transaction(() => {
      let inserted = 0;
      for (const row of rows) {
        this.insertOutboxRow
          .bind([
            row.dispatchKey, row.workflowId, row.ordinal, row.activityType, row.input, row.attempt ?? 0,
            row.visibleAfter, row.runId ?? null, row.namespace ?? null, row.taskQueue ?? null,
            row.node ?? null, row.maxAttempts ?? 10,
          ])
          .stepReset();
        inserted += this.#db.changes();
      }
      return inserted;
    });
  }

  claimOutbox(now, limit) {
    const rows = this.#transaction(() => {
      const next = this.nextToken;
      next.step();
      const token = next.get(0) + 1;
      next.reset();
      const claim = this.claim.bind([now, limit, '[]', null, null, null, token]);
      const claimed = [];
      while (claim.step()) claimed.push(outboxRowFrom(claim));
      claim.reset();
      if (claimed.length > 0) this.setToken.bind([token]).stepReset();
      return claimed;
    });
    // RETURNING gives no order; the claim order is recomputed as the store does.
    return rows.sort((a, b) =>
      a.visibleAfter - b.visibleAfter || (a.dispatchKey < b.dispatchKey ? -1 : a.dispatchKey > b.dispatchKey ? 1 : 0),
    );
  }

  #completeIn(dispatchKey, claimToken) {
    const stmt = this.complete.bind([dispatchKey, claimToken]);
    const settled = stmt.step();
    stmt.reset();
    if (!settled) throw conflict(`outbox row ${dispatchKey} is not held by claim ${claimToken}`);
  }

  completeOutbox(dispatchKey, claimToken) {
    this.#transaction(() => this.#completeIn(dispatchKey, claimToken));
  }

  completeOutboxBatch(claims) {
    this.#transaction(() => {
      for (const claim of claims) this.#completeIn(claim.dispatchKey, claim.claimToken);
    });
  }

  compareAndSwapCheckpoint(checkpoint, expectedRevision) {
    const state = JSON.stringify(checkpoint.state);
    const args = [checkpoint.checkpointId, checkpoint.runId ?? null, checkpoint.revision, state, checkpoint.updatedAt];
    this.#transaction(() => {
      const stmt = expectedRevision === null ? this.insertCheckpoint : this.updateCheckpoint;
      stmt.bind(args).stepReset();
      if (this.#db.changes() !== 1) throw conflict(`checkpoint ${checkpoint.checkpointId} revision`);
    });
  }
}

function outboxRowFrom(stmt) {
  return {
    dispatchKey: stmt.get(0),
    workflowId: stmt.get(1),
    ordinal: stmt.get(2),
    activityType: stmt.get(3),
    input: stmt.get(4),
    status: stmt.get(5),
    attempt: stmt.get(6),
    visibleAfter: stmt.get(7),
    claimedAt: stmt.get(8),
    runId: stmt.get(9),
    namespace: stmt.get(10),
    taskQueue: stmt.get(11),
    node: stmt.get(12),
    claimToken: stmt.get(13),
    maxAttempts: stmt.get(14),
    deadReason: stmt.get(15),
  };
}
