-- runstore schema, version 2: applied after schema.sql, in the same transaction, by
-- migrations.rs. Forward-only: a version-1 database gains these tables and columns in place.

-- ----- steps and request ids (sqlite/steps.rs) -----
-- The request log: a step's request id, what its operations were (a SHA-256 of their JSON)
-- and their outcomes, written in the step's own transaction. Bounded by count (seq) and age.
CREATE TABLE requests (
    seq          INTEGER PRIMARY KEY,
    request_id   TEXT NOT NULL UNIQUE,
    fingerprint  TEXT NOT NULL,
    outcomes     TEXT NOT NULL,
    committed_at INTEGER NOT NULL
);
CREATE INDEX requests_committed ON requests (committed_at);

-- ----- outbox: fenced claims and poison rows (sqlite/outbox.rs) -----


-- ----- retention and bounded reads (sqlite/retention.rs) -----


-- ----- end of version 2 -----
