-- runstore schema on PostgreSQL, version 2: applied after schema.sql, in one transaction, by
-- migrations.rs.

-- The request log keeps one window of ids per scope (a namespace of the sync server; '' for
-- the store's own steps), bounded by how many requests of the scope committed after an id,
-- counted; `seq` only orders them (rolled-back transactions use up its values too).
ALTER TABLE requests ADD COLUMN scope TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE requests DROP CONSTRAINT requests_request_id_key;
ALTER TABLE requests ADD CONSTRAINT requests_scope_request_id_key UNIQUE (scope, request_id);
CREATE INDEX requests_scope ON requests (scope, seq);
DROP INDEX requests_committed;
-- What each scope's log has forgotten: the latest commit time of a request it no longer
-- holds. A request sent after that time and not in the log did not commit.
CREATE TABLE request_scopes (
    scope             TEXT COLLATE "C" PRIMARY KEY,
    forgotten_through BIGINT NOT NULL
);

-- Change feeds of the sync server: one per namespace, each push an entry (`workflow_id` went
-- from head `base` to `head`). Positions run 1, 2, ... per feed in commit order: each push's
-- transaction takes the feed's row in sync_feed_heads (an UPDATE, held to its commit), so
-- pushes to one namespace queue on it instead of racing for the next position, and a reader
-- never sees a position before the ones below it.
CREATE TABLE sync_feed (
    feed        TEXT COLLATE "C" NOT NULL,
    position    BIGINT NOT NULL CHECK (position >= 1),
    workflow_id TEXT COLLATE "C" NOT NULL,
    base        BIGINT NOT NULL CHECK (base >= 0),
    head        BIGINT NOT NULL CHECK (head > base),
    PRIMARY KEY (feed, position)
);
CREATE TABLE sync_feed_heads (
    feed     TEXT COLLATE "C" PRIMARY KEY,
    position BIGINT NOT NULL CHECK (position >= 1)
);

-- The sync state of a store that syncs with servers, as on SQLite (src/sqlite/schema_4.sql).
CREATE TABLE sync_targets (
    target    TEXT COLLATE "C" PRIMARY KEY,
    client_id TEXT COLLATE "C" NOT NULL,
    cursor    BIGINT NOT NULL CHECK (cursor >= 0),
    mark      BIGINT CHECK (mark IS NULL OR mark >= 0)
);
CREATE TABLE sync_heads (
    target      TEXT COLLATE "C" NOT NULL,
    workflow_id TEXT COLLATE "C" NOT NULL,
    head        BIGINT NOT NULL CHECK (head >= 0),
    state       TEXT COLLATE "C" NOT NULL CHECK (state IN ('synced', 'conflict', 'purged')),
    PRIMARY KEY (target, workflow_id)
);
CREATE INDEX sync_heads_unsettled ON sync_heads (target, state, workflow_id)
    WHERE state != 'synced';
-- Appends lock this row (FOR UPDATE) while a target exists, so that marks are taken in commit
-- order, as SQLite's single writer takes them.
CREATE TABLE sync_clock (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    floor BIGINT NOT NULL CHECK (floor >= 0)
);
ALTER TABLE workflows ADD COLUMN changed BIGINT CHECK (changed IS NULL OR changed >= 1);
CREATE INDEX workflows_changed ON workflows (changed, workflow_id) WHERE changed IS NOT NULL;
