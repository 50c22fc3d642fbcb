-- runstore PostgreSQL schema, version 3: applied after schema_2.sql, in the same transaction,
-- by migrations.rs. Forward-only.

-- Leases on workflows (postgres/leases.rs): which device runs a workflow, under which fencing
-- epoch, until when (the server's clock; 0 once released). A push shares the workflow's lease
-- lock (an advisory lock) while it checks the epoch, so a take-over waits for it or fences it.
CREATE TABLE sync_leases (
    workflow_id TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT COLLATE "C" NOT NULL,
    epoch       BIGINT NOT NULL CHECK (epoch >= 1),
    expires_at  BIGINT NOT NULL
);
