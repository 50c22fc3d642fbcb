// The same exactly-once steps as workload.js's `handSide`, as the SQL a developer would write by
// hand on a plain SQLite database: a journal table and an effect-ledger table, one transaction
// per step holding the previous step's result and this step's start (STEPS + 1 transactions a
// workflow), the journal's next seq guarded by its primary key, the ledger's moves by their
// revision. Written once for any synchronous driver: better-sqlite3 in Node, the official SQLite
// wasm build's oo1 API in a worker (`db.prepare(sql)` answering `{ run(...params) }` with the
// rows changed).
import { STEPS, stepBody } from './workload.js';

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  workflow_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  PRIMARY KEY (workflow_id, seq)
);
CREATE TABLE IF NOT EXISTS effects (
  effect_id TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  status TEXT NOT NULL,
  record TEXT NOT NULL
);`;

/**
 * Hand-written steps on `db`: `prepare(sql)` gives `{ run(...params) }` answering the rows
 * changed, `exec(sql)` runs a statement without results.
 */
export function plainSide(db) {
  db.exec(SCHEMA);
  const insertEvent = db.prepare('INSERT INTO events (workflow_id, seq, event) VALUES (?, ?, ?)');
  const startEffect = db.prepare('INSERT INTO effects (effect_id, revision, status, record) VALUES (?, 0, ?, ?)');
  const moveEffect = db.prepare('UPDATE effects SET revision = revision + 1, status = ?, record = ? WHERE effect_id = ? AND revision = ?');

  /** One transaction: events from seq `head + 1`, then the ledger's moves; a failed check rolls it all back. */
  function commit(workflowId, head, events, effects) {
    db.exec('BEGIN IMMEDIATE');
    try {
      events.forEach((event, i) => insertEvent.run(workflowId, head + 1 + i, JSON.stringify(event)));
      for (const { key, revision, status, record } of effects) {
        const changed = revision === 0 ? startEffect.run(key, status, JSON.stringify(record)) : moveEffect.run(status, JSON.stringify(record), key, revision - 1);
        if (changed !== 1) throw new Error(`effect ${key} is not at revision ${revision - 1}`);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
    return head + events.length;
  }

  const effect = (workflowId, runId, i, revision, status) => {
    const key = `${workflowId}/${runId}/s${i}`;
    const request = { workflowId, runId, step: `s${i}`, attempt: 1 };
    return { key, revision, status: status.type, record: { capabilityId: `s${i}`, request, status, updatedAt: Date.now() } };
  };
  const custom = (name, data) => ({ type: 'custom', name, data, recordedAt: Date.now() });
  const start = (i) => custom('step', { n: i, step: `s${i}`, attempt: 1 });

  async function runOne(workflowId) {
    const runId = crypto.randomUUID();
    let events = [{ type: 'started', workflowType: 'ten-steps', runId, recordedAt: Date.now(), data: {} }, start(0)];
    let effects = [effect(workflowId, runId, 0, 0, { type: 'started' })];
    let head = 0;
    let value = null;
    for (let i = 0; i < STEPS; i++) {
      head = commit(workflowId, head, events, effects);
      value = await stepBody(workflowId, i);
      events = [custom('stepDone', { n: i, result: value })];
      effects = [effect(workflowId, runId, i, 1, { type: 'completed', output: value })];
      if (i + 1 < STEPS) {
        events.push(start(i + 1));
        effects.push(effect(workflowId, runId, i + 1, 0, { type: 'started' }));
      }
    }
    events.push({ type: 'completed', recordedAt: Date.now(), data: { result: value } });
    commit(workflowId, head, events, effects);
  }

  return { runOne, close() {} };
}
