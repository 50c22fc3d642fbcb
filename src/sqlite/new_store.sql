-- A new store's schema at the current version, in one transaction (migrations.rs).
-- Written from the migrations by `RUNSTORE_WRITE_SCHEMA=1 cargo test --lib
-- new_store`; do not edit: change the schema by a new migration.

CREATE TABLE events (
    workflow_id TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    kind        TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    event       BLOB NOT NULL,          -- versioned encoding, see model/journal.rs
    PRIMARY KEY (workflow_id, seq)
) WITHOUT ROWID;

CREATE TABLE workflows (
    workflow_id   TEXT PRIMARY KEY NOT NULL,
    head          INTEGER NOT NULL,
    status        TEXT NOT NULL,
    workflow_type TEXT,
    run_id        TEXT,
    started_at    INTEGER,
    closed_at     INTEGER,
    updated_at    INTEGER NOT NULL
, changed INTEGER CHECK (changed IS NULL OR changed >= 1));

CREATE INDEX workflows_status ON workflows (status, workflow_id);

CREATE INDEX workflows_type ON workflows (workflow_type, started_at);

CREATE TABLE timers (
    workflow_id TEXT NOT NULL,
    timer_id    TEXT NOT NULL,
    fire_at     INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, timer_id)
);

CREATE INDEX timers_fire_at ON timers (fire_at, workflow_id, timer_id);

CREATE TABLE outbox (
    dispatch_key  TEXT PRIMARY KEY NOT NULL,
    workflow_id   TEXT NOT NULL,
    ordinal       INTEGER NOT NULL,
    activity_type TEXT NOT NULL,
    input         BLOB NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'claimed', 'done', 'failed', 'cancelled')),
    attempt       INTEGER NOT NULL CHECK (attempt >= 0),
    visible_after INTEGER NOT NULL,
    claimed_at    INTEGER,
    run_id        TEXT,
    namespace     TEXT,
    task_queue    TEXT,
    node          TEXT
, claim_token INTEGER NOT NULL DEFAULT 0 CHECK (claim_token >= 0), max_attempts INTEGER NOT NULL DEFAULT 10 CHECK (max_attempts >= 1), dead_reason TEXT);

CREATE INDEX outbox_pending ON outbox (visible_after, dispatch_key) WHERE status = 'pending';

CREATE INDEX outbox_claimed ON outbox (claimed_at, dispatch_key) WHERE status = 'claimed';

CREATE TABLE visibility (
    workflow_id       TEXT PRIMARY KEY NOT NULL,
    run_id            TEXT NOT NULL,
    workflow_type     TEXT NOT NULL,
    status            TEXT NOT NULL,
    start_time        INTEGER NOT NULL,
    close_time        INTEGER CHECK (close_time IS NULL OR close_time >= start_time),
    failed_step       TEXT,
    failure_reason    TEXT,
    search_attributes TEXT NOT NULL CHECK (json_valid(search_attributes)
                                           AND json_type(search_attributes) = 'object')
, head INTEGER CHECK (head IS NULL OR head >= 0));

CREATE INDEX visibility_start ON visibility (start_time DESC, workflow_id);

CREATE INDEX visibility_type ON visibility (workflow_type, start_time DESC, workflow_id);

CREATE INDEX visibility_status ON visibility (status, start_time DESC, workflow_id);

CREATE INDEX visibility_close ON visibility (close_time) WHERE close_time IS NOT NULL;

CREATE TABLE namespaces (
    name       TEXT PRIMARY KEY NOT NULL,
    origin     TEXT NOT NULL CHECK (origin IN ('worker', 'start', 'explicit', 'inferred')),
    state      TEXT NOT NULL CHECK (state IN ('active', 'deprecated')),
    placement  TEXT CHECK (placement IS NULL OR json_valid(placement)),
    created_at INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL CHECK (last_seen >= created_at)
);

CREATE INDEX namespaces_created ON namespaces (created_at, name);

CREATE TABLE packages (
    workflow_type TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    archive       BLOB NOT NULL,
    deployed_at   INTEGER NOT NULL,
    PRIMARY KEY (workflow_type, content_hash)
);

CREATE INDEX packages_deployed ON packages (deployed_at, workflow_type, content_hash);

CREATE INDEX packages_hash ON packages (content_hash);

CREATE TABLE package_routes (
    workflow_type TEXT PRIMARY KEY NOT NULL,
    content_hash  TEXT NOT NULL
);

CREATE INDEX package_routes_hash ON package_routes (content_hash);

CREATE TABLE checkpoints (
    checkpoint_id TEXT PRIMARY KEY NOT NULL,
    run_id        TEXT,
    revision      INTEGER NOT NULL CHECK (revision >= 0),
    state         TEXT NOT NULL CHECK (json_valid(state)),
    updated_at    INTEGER NOT NULL
);

CREATE INDEX checkpoints_run ON checkpoints (run_id, checkpoint_id) WHERE run_id IS NOT NULL;

CREATE TABLE effects (
    effect_id       TEXT PRIMARY KEY NOT NULL,
    capability_id   TEXT NOT NULL,
    idempotency_key TEXT,
    revision        INTEGER NOT NULL CHECK (revision >= 0),
    status          TEXT NOT NULL
                    CHECK (status IN ('prepared', 'started', 'completed', 'failed', 'outcomeUnknown')),
    request         TEXT NOT NULL CHECK (json_valid(request)),
    output          TEXT CHECK (output IS NULL OR json_valid(output)),
    error           TEXT,
    updated_at      INTEGER NOT NULL,
    UNIQUE (capability_id, idempotency_key),
    CHECK ((status = 'completed') = (output IS NOT NULL)),
    CHECK ((status = 'failed') = (error IS NOT NULL))
);

CREATE INDEX effects_status ON effects (status, effect_id);

CREATE TABLE run_events (
    event_id    TEXT PRIMARY KEY NOT NULL,
    run_id      TEXT NOT NULL,
    sequence    INTEGER NOT NULL CHECK (sequence >= 0),
    recorded_at INTEGER NOT NULL,
    data        TEXT NOT NULL CHECK (json_valid(data)),
    UNIQUE (run_id, sequence)
);

CREATE TABLE artifacts (
    scope           TEXT NOT NULL,
    artifact_id     TEXT NOT NULL,
    media_type      TEXT NOT NULL,
    name            TEXT,
    size_bytes      INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256          TEXT NOT NULL,
    idempotency_key TEXT,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    bytes           BLOB NOT NULL,
    PRIMARY KEY (scope, artifact_id),
    UNIQUE (scope, idempotency_key)
);

CREATE INDEX artifacts_created ON artifacts (scope, created_at, artifact_id);

CREATE INDEX artifacts_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY NOT NULL,
    revision        INTEGER NOT NULL CHECK (revision >= 0),
    format_version  INTEGER NOT NULL CHECK (format_version >= 0),
    updated_at      INTEGER NOT NULL,
    state           BLOB NOT NULL
);

CREATE TABLE outbox_claim_counter (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    last_token INTEGER NOT NULL CHECK (last_token >= 0)
);

CREATE INDEX workflows_closed ON workflows (closed_at, workflow_id) WHERE closed_at IS NOT NULL;

CREATE INDEX outbox_workflow ON outbox (workflow_id);

CREATE TABLE request_scopes (
    scope_number      INTEGER PRIMARY KEY,
    scope             TEXT NOT NULL UNIQUE,
    forgotten_through INTEGER
);

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

CREATE TABLE sync_targets (
    target    TEXT PRIMARY KEY NOT NULL,
    client_id TEXT NOT NULL,
    cursor    INTEGER NOT NULL CHECK (cursor >= 0),
    mark      INTEGER CHECK (mark IS NULL OR mark >= 0)
) WITHOUT ROWID;

CREATE TABLE sync_heads (
    target      TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    head        INTEGER NOT NULL CHECK (head >= 0),
    state       TEXT NOT NULL CHECK (state IN ('synced', 'conflict', 'purged')),
    PRIMARY KEY (target, workflow_id)
) WITHOUT ROWID;

CREATE INDEX sync_heads_unsettled ON sync_heads (target, state, workflow_id)
    WHERE state != 'synced';

CREATE TABLE sync_clock (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    floor INTEGER NOT NULL CHECK (floor >= 0)
);

CREATE INDEX workflows_changed ON workflows (changed, workflow_id) WHERE changed IS NOT NULL;

CREATE TABLE requests (
    scope_number INTEGER NOT NULL CHECK (scope_number >= 0),
    request_id   TEXT NOT NULL,
    slot         INTEGER NOT NULL,
    fingerprint  TEXT NOT NULL,
    outcomes     TEXT NOT NULL,
    committed_at INTEGER NOT NULL,
    PRIMARY KEY (scope_number, request_id)
) WITHOUT ROWID;

CREATE TABLE changes (
    number INTEGER PRIMARY KEY,
    change TEXT
);

CREATE TABLE sync_leases (
    workflow_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL CHECK (epoch >= 1),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO outbox_claim_counter VALUES (1, 0);
INSERT INTO request_scopes VALUES (0, '', NULL);
