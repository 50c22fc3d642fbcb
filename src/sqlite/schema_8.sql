-- runstore schema, version 8: applied after schema_7.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- leases on workflows (sqlite/leases.rs), kept by the sync server -----
-- Which device runs a workflow, under which fencing epoch, until when (the server's clock; 0
-- once released). A push from another holder or an older epoch is refused (FENCED).
CREATE TABLE sync_leases (
    workflow_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL CHECK (epoch >= 1),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

-- ----- end of version 8 -----
