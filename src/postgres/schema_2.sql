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
