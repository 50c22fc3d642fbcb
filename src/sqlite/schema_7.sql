-- runstore schema, version 7: applied after schema_6.sql, in the same transaction, by
-- migrations.rs. Forward-only.

-- ----- the change feed (sqlite/change_feed.rs) -----
-- One row per commit that changed something, numbered in commit order and written in that
-- commit's transaction: what it changed (areas, workflows, heads, revisions, its request id)
-- as JSON. A reader that saw change n asks for the rows after n. The newest 10,000 are kept;
-- the newest row is never deleted, so numbers are never given twice. A NULL change marks an
-- import: the store's content was replaced there, and a reader from before it reads afresh.
CREATE TABLE changes (
    number INTEGER PRIMARY KEY,
    change TEXT
);

-- ----- end of version 7 -----
