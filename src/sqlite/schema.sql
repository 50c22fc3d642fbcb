-- runstore schema, version 1. Applied once, in one transaction, by migrations.rs.
-- Times are INTEGER milliseconds since the Unix epoch. JSON columns hold UTF-8 JSON text.

-- Workflow event journal: seq runs 1..n per workflow with no gaps (append checks the head).
CREATE TABLE events (
    workflow_id TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    kind        TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    event       BLOB NOT NULL,          -- versioned encoding, see model/journal.rs
    PRIMARY KEY (workflow_id, seq)
) WITHOUT ROWID;

-- Status projection, kept current by every append in the same transaction.
CREATE TABLE workflows (
    workflow_id   TEXT PRIMARY KEY NOT NULL,
    head          INTEGER NOT NULL,
    status        TEXT NOT NULL,
    workflow_type TEXT,
    run_id        TEXT,
    started_at    INTEGER,
    closed_at     INTEGER,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX workflows_status ON workflows (status, workflow_id);
CREATE INDEX workflows_type ON workflows (workflow_type, started_at);

-- Durable timers.
CREATE TABLE timers (
    workflow_id TEXT NOT NULL,
    timer_id    TEXT NOT NULL,
    fire_at     INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, timer_id)
);
CREATE INDEX timers_fire_at ON timers (fire_at, workflow_id, timer_id);

-- Transactional outbox of activity dispatches.
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
);
CREATE INDEX outbox_pending ON outbox (visible_after, dispatch_key) WHERE status = 'pending';
CREATE INDEX outbox_claimed ON outbox (claimed_at, dispatch_key) WHERE status = 'claimed';
CREATE INDEX outbox_workflow ON outbox (workflow_id, status);
CREATE INDEX outbox_namespace ON outbox (namespace, status);

-- Visibility index: one record per workflow, listed newest start first (workflow id breaks
-- ties) and filtered on bound values, search attributes through json_extract.
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
);
CREATE INDEX visibility_start ON visibility (start_time DESC, workflow_id);
CREATE INDEX visibility_type ON visibility (workflow_type, start_time DESC, workflow_id);
CREATE INDEX visibility_status ON visibility (status, start_time DESC, workflow_id);
CREATE INDEX visibility_close ON visibility (close_time) WHERE close_time IS NOT NULL;

-- Namespaces, registered on first use and retired by deprecation.
CREATE TABLE namespaces (
    name       TEXT PRIMARY KEY NOT NULL,
    origin     TEXT NOT NULL CHECK (origin IN ('worker', 'start', 'explicit', 'inferred')),
    state      TEXT NOT NULL CHECK (state IN ('active', 'deprecated')),
    placement  TEXT CHECK (placement IS NULL OR json_valid(placement)),
    created_at INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL CHECK (last_seen >= created_at)
);
CREATE INDEX namespaces_created ON namespaces (created_at, name);

-- Workflow packages and the route of each workflow type. A route names a content hash that
-- at least one package has (kept by packages.rs: put routes in the same transaction, delete
-- drops the routes of a hash no package has any more).
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

-- Agent-run checkpoints, compare-and-swap on revision.
CREATE TABLE checkpoints (
    checkpoint_id TEXT PRIMARY KEY NOT NULL,
    run_id        TEXT,
    revision      INTEGER NOT NULL CHECK (revision >= 0),
    state         TEXT NOT NULL CHECK (json_valid(state)),
    updated_at    INTEGER NOT NULL
);
CREATE INDEX checkpoints_run ON checkpoints (run_id, checkpoint_id) WHERE run_id IS NOT NULL;

-- Side-effect ledger, compare-and-swap on revision. An outcome column is set exactly when the
-- status carries it.
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

-- Agent-run event journal; events are immutable.
CREATE TABLE run_events (
    event_id    TEXT PRIMARY KEY NOT NULL,
    run_id      TEXT NOT NULL,
    sequence    INTEGER NOT NULL CHECK (sequence >= 0),
    recorded_at INTEGER NOT NULL,
    data        TEXT NOT NULL CHECK (json_valid(data)),
    UNIQUE (run_id, sequence)
);

-- Artifacts, keyed by an id derived from their identity (see sqlite/artifacts.rs). `bytes` is
-- the last column so that metadata reads stop before its overflow pages.
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

-- Conversation state, one versioned blob per conversation, compare-and-swap on revision.
CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY NOT NULL,
    revision        INTEGER NOT NULL CHECK (revision >= 0),
    format_version  INTEGER NOT NULL CHECK (format_version >= 0),
    updated_at      INTEGER NOT NULL,
    state           BLOB NOT NULL
);
