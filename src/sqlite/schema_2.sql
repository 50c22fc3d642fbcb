-- runstore schema, version 2: applied after schema.sql, in the same transaction, by
-- migrations.rs. Forward-only: a version-1 database gains these tables and columns in place.

-- ----- steps and request ids (sqlite/steps.rs) -----


-- ----- outbox: fenced claims and poison rows (sqlite/outbox.rs) -----


-- ----- retention and bounded reads (sqlite/retention.rs) -----
-- Closed workflows by close time, the order purge_workflows deletes them in.
CREATE INDEX workflows_closed ON workflows (closed_at, workflow_id) WHERE closed_at IS NOT NULL;


-- ----- end of version 2 -----
