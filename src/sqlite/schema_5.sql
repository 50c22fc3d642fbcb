-- runstore schema, version 5: applied after schema_4.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- the request log (sqlite/steps.rs) -----
-- One window of request ids per scope (a namespace of the sync server; '' for the store's own
-- steps), so that one scope's traffic cannot push another's ids out. A request's `slot` is its
-- scope's number times 2^40 plus its ordinal among the scope's committed requests (1, 2, ...):
-- only committed rows exist, so a window bounded by it is bounded by what was committed, and
-- each scope's requests are one range of the table's rowid, appended at its end.
ALTER TABLE requests RENAME TO requests_v3;
CREATE TABLE requests (
    slot         INTEGER PRIMARY KEY,
    scope_number INTEGER NOT NULL CHECK (scope_number >= 0),
    request_id   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    outcomes     TEXT NOT NULL,
    committed_at INTEGER NOT NULL,
    UNIQUE (scope_number, request_id)
);
INSERT INTO requests (slot, scope_number, request_id, fingerprint, outcomes, committed_at)
    SELECT row_number() OVER (ORDER BY seq), 0, request_id, fingerprint, outcomes, committed_at
    FROM requests_v3;
DROP TABLE requests_v3;
-- The scopes, numbered (0 is ''), and what each one's log has forgotten: the latest commit
-- time of a request it no longer holds (NULL: none). A request sent after that time and not
-- in the log did not commit.
CREATE TABLE request_scopes (
    scope_number      INTEGER PRIMARY KEY,
    scope             TEXT NOT NULL UNIQUE,
    forgotten_through INTEGER
);
INSERT INTO request_scopes (scope_number, scope, forgotten_through) VALUES (0, '', NULL);

-- ----- change feeds of the sync server (sqlite/sync_feed.rs) -----
-- One feed per namespace: each push is an entry, `workflow_id` went from head `base` to
-- `head`. Positions run 1, 2, ... per feed in commit order: the feed's row in
-- sync_feed_heads is taken by each push's transaction, so pushes queue on it rather than race.
CREATE TABLE sync_feed (
    feed        TEXT NOT NULL,
    position    INTEGER NOT NULL CHECK (position >= 1),
    workflow_id TEXT NOT NULL,
    base        INTEGER NOT NULL CHECK (base >= 0),
    head        INTEGER NOT NULL CHECK (head > base),
    PRIMARY KEY (feed, position)
) WITHOUT ROWID;
CREATE TABLE sync_feed_heads (
    feed     TEXT PRIMARY KEY NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 1)
) WITHOUT ROWID;

-- ----- the sync state of a store that syncs with servers (sqlite/sync_state.rs) -----
-- Per target (a server's namespace): the client id its pushes are made under, where the
-- store is in the namespace's change feed, and the change mark up to which every local append
-- was handled by a pass (NULL until a first pass over every workflow ended).
CREATE TABLE sync_targets (
    target    TEXT PRIMARY KEY NOT NULL,
    client_id TEXT NOT NULL,
    cursor    INTEGER NOT NULL CHECK (cursor >= 0),
    mark      INTEGER CHECK (mark IS NULL OR mark >= 0)
) WITHOUT ROWID;
-- Per target and workflow: the head both agree on (events 1..head are the same on both), and
-- whether they are in step, apart (a conflict, reported at each pass) or the workflow was
-- purged here (a tombstone: not pulled back).
CREATE TABLE sync_heads (
    target      TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    head        INTEGER NOT NULL CHECK (head >= 0),
    state       TEXT NOT NULL CHECK (state IN ('synced', 'conflict', 'purged')),
    PRIMARY KEY (target, workflow_id)
) WITHOUT ROWID;
CREATE INDEX sync_heads_unsettled ON sync_heads (target, state, workflow_id)
    WHERE state != 'synced';
-- While a target exists (this row exists), each append gives its workflow the next change
-- mark: above every mark given before, and above `floor`, the highest mark of a purged
-- workflow, so that marks never go back when the workflow holding the highest is deleted.
CREATE TABLE sync_clock (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    floor INTEGER NOT NULL CHECK (floor >= 0)
);
ALTER TABLE workflows ADD COLUMN changed INTEGER CHECK (changed IS NULL OR changed >= 1);
CREATE INDEX workflows_changed ON workflows (changed, workflow_id) WHERE changed IS NOT NULL;

-- ----- end of version 5 -----
