-- runstore schema, version 4: applied after schema_3.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- outbox indexes that claims and completions leave alone (sqlite/outbox.rs) -----
-- An UPDATE rewrites every index whose columns (or partial-index condition) it changes. The
-- status used to be part of outbox_workflow and outbox_namespace, so every claim and every
-- completion moved each row's entry in both, on pages scattered over the whole index: a
-- claim of 100 rows wrote about twice the pages the same claim on a table with one status
-- index writes. Now only the partial indexes of pending and claimed rows follow the status:
-- - outbox_workflow keys rows by workflow alone: a workflow's rows (for cancelling and
--   purging it) are found by it whatever their status, which the row itself then tells;
-- - outbox_namespace goes: the in-flight and claimed counts per namespace are read from the
--   rows of outbox_pending and outbox_claimed, the live rows only.
DROP INDEX outbox_workflow;
CREATE INDEX outbox_workflow ON outbox (workflow_id);
DROP INDEX outbox_namespace;

-- ----- end of version 4 -----
