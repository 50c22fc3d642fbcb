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
-- claim_token: the token of the row's last claim (0 before its first); settlements must name it.
-- Tokens come from one store-wide counter, so a token is never handed out twice, not even to a
-- row inserted again under the key of a deleted one. max_attempts: a re-arm or retry that would
-- reach it dead-letters the row instead, with dead_reason saying why.
ALTER TABLE outbox ADD COLUMN claim_token INTEGER NOT NULL DEFAULT 0 CHECK (claim_token >= 0);
ALTER TABLE outbox ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 10 CHECK (max_attempts >= 1);
ALTER TABLE outbox ADD COLUMN dead_reason TEXT;
CREATE TABLE outbox_claim_counter (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    last_token INTEGER NOT NULL CHECK (last_token >= 0)
);
INSERT INTO outbox_claim_counter (id, last_token) VALUES (1, 0);
-- visibility (sqlite/visibility.rs): the journal head a record reflects, so that an upsert
-- from an older head cannot overwrite a newer record. NULL: the writer did not say.
ALTER TABLE visibility ADD COLUMN head INTEGER CHECK (head IS NULL OR head >= 0);

-- ----- retention and bounded reads (sqlite/retention.rs) -----
-- Closed workflows by close time, the order purge_workflows deletes them in.
CREATE INDEX workflows_closed ON workflows (closed_at, workflow_id) WHERE closed_at IS NOT NULL;


-- ----- end of version 2 -----
