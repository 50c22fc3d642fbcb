-- runstore schema, version 6: applied after schema_5.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- the request log in one b-tree (sqlite/steps.rs) -----
-- The log's rows are keyed by what a request is looked up by, its scope and id, and carry
-- their slot (the scope's number times 2^40 plus the request's ordinal among the scope's
-- committed requests, as in version 5) as a column. Version 5 kept a table keyed by slot and
-- a UNIQUE index on (scope_number, request_id): every recorded request wrote a page of each,
-- two pages per commit on top of the step's own. Now it writes one. The newest slot of a
-- scope, which numbers the next request and bounds the window, is remembered by the
-- connection that wrote it (and found by reading the scope's rows when it is not); the log's
-- window and answers are those of version 5.
ALTER TABLE requests RENAME TO requests_v5;
CREATE TABLE requests (
    scope_number INTEGER NOT NULL CHECK (scope_number >= 0),
    request_id   TEXT NOT NULL,
    slot         INTEGER NOT NULL,
    fingerprint  TEXT NOT NULL,
    outcomes     TEXT NOT NULL,
    committed_at INTEGER NOT NULL,
    PRIMARY KEY (scope_number, request_id)
) WITHOUT ROWID;
INSERT INTO requests (scope_number, request_id, slot, fingerprint, outcomes, committed_at)
    SELECT scope_number, request_id, slot, fingerprint, outcomes, committed_at
    FROM requests_v5;
DROP TABLE requests_v5;

-- ----- end of version 6 -----
