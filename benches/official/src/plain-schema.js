// The tables of the SQL an app developer would write by hand for the workloads (plain.js on the
// official build in a page, tests/js/bench-node-file.mjs on better-sqlite3 in Node): one per
// job, its primary key and the one index its query needs, JSON text columns.
export const SCHEMA = `
CREATE TABLE events (
  workflow_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  PRIMARY KEY (workflow_id, seq)
);
CREATE TABLE outbox (
  dispatch_key TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL,
  activity_type TEXT NOT NULL,
  input BLOB NOT NULL,
  status TEXT NOT NULL,
  visible_after INTEGER NOT NULL,
  claimed_at INTEGER
);
CREATE INDEX outbox_due ON outbox (status, visible_after);
CREATE TABLE checkpoints (
  checkpoint_id TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  state TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);`;
