-- runstore schema, version 3: applied after schema_2.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- the request log (sqlite/steps.rs) -----
-- Bounded without an index on commit time: a lookup applies the bounds itself (a request
-- more than MAX_KEPT_REQUESTS requests or REQUEST_RETENTION_MS behind the newest reads as
-- forgotten), and the rows past them are deleted in batches (PRUNE_EVERY), the expired ones among
-- the oldest. Each request thus writes the log's row and its request_id entry, one index
-- page fewer than before, and a full log no longer deletes its oldest row at every commit.
DROP INDEX requests_committed;

-- ----- end of version 3 -----
