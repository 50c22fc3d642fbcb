-- runstore schema on PostgreSQL, version 1. Applied once, in one transaction, by
-- migrations.rs. The same tables and columns as the SQLite schema (src/sqlite/schema.sql and
-- schema_2.sql together), in portable SQL: BIGINT for every integer (times are milliseconds
-- since the Unix epoch), TEXT for identifiers and JSON documents (kept as written, byte for
-- byte), BYTEA for byte payloads. Identifiers sort bytewise (COLLATE "C"), as in SQLite,
-- whatever the database's locale.

-- Workflow event journal: seq runs 1..n per workflow with no gaps. The primary key is what
-- two concurrent appends under the same head collide on.
CREATE TABLE events (
    workflow_id TEXT COLLATE "C" NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    kind        TEXT COLLATE "C" NOT NULL,
    recorded_at BIGINT NOT NULL,
    event       BYTEA NOT NULL,
    PRIMARY KEY (workflow_id, seq)
);

-- Status projection, kept current by every append in the same transaction; its row is what
-- an append locks (FOR UPDATE) to check the head.
CREATE TABLE workflows (
    workflow_id   TEXT COLLATE "C" PRIMARY KEY,
    head          BIGINT NOT NULL CHECK (head >= 0),
    status        TEXT COLLATE "C" NOT NULL,
    workflow_type TEXT COLLATE "C",
    run_id        TEXT COLLATE "C",
    started_at    BIGINT,
    closed_at     BIGINT,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX workflows_status ON workflows (status, workflow_id);
CREATE INDEX workflows_type ON workflows (workflow_type, started_at);
CREATE INDEX workflows_closed ON workflows (closed_at, workflow_id) WHERE closed_at IS NOT NULL;

-- Durable timers.
CREATE TABLE timers (
    workflow_id TEXT COLLATE "C" NOT NULL,
    timer_id    TEXT COLLATE "C" NOT NULL,
    fire_at     BIGINT NOT NULL,
    PRIMARY KEY (workflow_id, timer_id)
);
CREATE INDEX timers_fire_at ON timers (fire_at, workflow_id, timer_id);

-- Transactional outbox. claim_token: the token of the row's last claim (0 before its first),
-- from the sequence below, so a token is never handed out twice.
CREATE TABLE outbox (
    dispatch_key  TEXT COLLATE "C" PRIMARY KEY,
    workflow_id   TEXT COLLATE "C" NOT NULL,
    ordinal       BIGINT NOT NULL CHECK (ordinal >= 0),
    activity_type TEXT COLLATE "C" NOT NULL,
    input         BYTEA NOT NULL,
    status        TEXT COLLATE "C" NOT NULL
                  CHECK (status IN ('pending', 'claimed', 'done', 'failed', 'cancelled')),
    attempt       BIGINT NOT NULL CHECK (attempt >= 0),
    visible_after BIGINT NOT NULL,
    claimed_at    BIGINT,
    run_id        TEXT COLLATE "C",
    namespace     TEXT COLLATE "C",
    task_queue    TEXT COLLATE "C",
    node          TEXT COLLATE "C",
    claim_token   BIGINT NOT NULL DEFAULT 0 CHECK (claim_token >= 0),
    max_attempts  BIGINT NOT NULL DEFAULT 10 CHECK (max_attempts >= 1),
    dead_reason   TEXT
);
CREATE INDEX outbox_pending ON outbox (visible_after, dispatch_key) WHERE status = 'pending';
CREATE INDEX outbox_claimed ON outbox (claimed_at, dispatch_key) WHERE status = 'claimed';
CREATE INDEX outbox_workflow ON outbox (workflow_id, status);
CREATE INDEX outbox_namespace ON outbox (namespace, status);
CREATE SEQUENCE outbox_claim_token AS BIGINT MINVALUE 1;

-- Visibility index: one record per workflow, newest start first. Search attributes are JSON
-- text, read as jsonb by the filters.
CREATE TABLE visibility (
    workflow_id       TEXT COLLATE "C" PRIMARY KEY,
    run_id            TEXT COLLATE "C" NOT NULL,
    workflow_type     TEXT COLLATE "C" NOT NULL,
    status            TEXT COLLATE "C" NOT NULL,
    start_time        BIGINT NOT NULL,
    close_time        BIGINT CHECK (close_time IS NULL OR close_time >= start_time),
    failed_step       TEXT,
    failure_reason    TEXT,
    search_attributes TEXT NOT NULL,
    head              BIGINT CHECK (head IS NULL OR head >= 0)
);
CREATE INDEX visibility_start ON visibility (start_time DESC, workflow_id);
CREATE INDEX visibility_type ON visibility (workflow_type, start_time DESC, workflow_id);
CREATE INDEX visibility_status ON visibility (status, start_time DESC, workflow_id);
CREATE INDEX visibility_close ON visibility (close_time) WHERE close_time IS NOT NULL;

-- Namespaces.
CREATE TABLE namespaces (
    name       TEXT COLLATE "C" PRIMARY KEY,
    origin     TEXT COLLATE "C" NOT NULL CHECK (origin IN ('worker', 'start', 'explicit', 'inferred')),
    state      TEXT COLLATE "C" NOT NULL CHECK (state IN ('active', 'deprecated')),
    placement  TEXT,
    created_at BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL CHECK (last_seen >= created_at)
);
CREATE INDEX namespaces_created ON namespaces (created_at, name);

-- Workflow packages and the route of each workflow type.
CREATE TABLE packages (
    workflow_type TEXT COLLATE "C" NOT NULL,
    content_hash  TEXT COLLATE "C" NOT NULL,
    archive       BYTEA NOT NULL,
    deployed_at   BIGINT NOT NULL,
    PRIMARY KEY (workflow_type, content_hash)
);
CREATE INDEX packages_deployed ON packages (deployed_at, workflow_type, content_hash);
CREATE INDEX packages_hash ON packages (content_hash);
CREATE TABLE package_routes (
    workflow_type TEXT COLLATE "C" PRIMARY KEY,
    content_hash  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX package_routes_hash ON package_routes (content_hash);

-- Agent-run checkpoints, compare-and-swap on revision.
CREATE TABLE checkpoints (
    checkpoint_id TEXT COLLATE "C" PRIMARY KEY,
    run_id        TEXT COLLATE "C",
    revision      BIGINT NOT NULL CHECK (revision >= 0),
    state         TEXT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX checkpoints_run ON checkpoints (run_id, checkpoint_id) WHERE run_id IS NOT NULL;

-- Side-effect ledger, compare-and-swap on revision.
CREATE TABLE effects (
    effect_id       TEXT COLLATE "C" PRIMARY KEY,
    capability_id   TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C",
    revision        BIGINT NOT NULL CHECK (revision >= 0),
    status          TEXT COLLATE "C" NOT NULL
                    CHECK (status IN ('prepared', 'started', 'completed', 'failed', 'outcomeUnknown')),
    request         TEXT NOT NULL,
    output          TEXT,
    error           TEXT,
    updated_at      BIGINT NOT NULL,
    UNIQUE (capability_id, idempotency_key),
    CHECK ((status = 'completed') = (output IS NOT NULL)),
    CHECK ((status = 'failed') = (error IS NOT NULL))
);
CREATE INDEX effects_status ON effects (status, effect_id);
CREATE INDEX effects_unresolved ON effects (updated_at, effect_id);

-- Agent-run event journal; events are immutable.
CREATE TABLE run_events (
    event_id    TEXT COLLATE "C" PRIMARY KEY,
    run_id      TEXT COLLATE "C" NOT NULL,
    sequence    BIGINT NOT NULL CHECK (sequence >= 0),
    recorded_at BIGINT NOT NULL,
    data        TEXT NOT NULL,
    UNIQUE (run_id, sequence)
);

-- Artifacts, keyed by an id derived from their identity (see sqlite/artifacts.rs).
CREATE TABLE artifacts (
    scope           TEXT COLLATE "C" NOT NULL,
    artifact_id     TEXT COLLATE "C" NOT NULL,
    media_type      TEXT NOT NULL,
    name            TEXT,
    size_bytes      BIGINT NOT NULL CHECK (size_bytes >= 0),
    sha256          TEXT NOT NULL,
    idempotency_key TEXT COLLATE "C",
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT,
    bytes           BYTEA NOT NULL,
    PRIMARY KEY (scope, artifact_id),
    UNIQUE (scope, idempotency_key)
);
CREATE INDEX artifacts_created ON artifacts (scope, created_at, artifact_id);
CREATE INDEX artifacts_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL;

-- Conversation state, compare-and-swap on revision.
CREATE TABLE conversations (
    conversation_id TEXT COLLATE "C" PRIMARY KEY,
    revision        BIGINT NOT NULL CHECK (revision >= 0),
    format_version  BIGINT NOT NULL CHECK (format_version >= 0),
    updated_at      BIGINT NOT NULL,
    state           BYTEA NOT NULL
);

-- The request log of steps: a request id, its operations' fingerprint and outcomes, written
-- in the step's own transaction. The unique request id is what two concurrent steps under
-- one id collide on. Bounded by count (seq) and age.
CREATE TABLE requests (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id   TEXT COLLATE "C" NOT NULL UNIQUE,
    fingerprint  TEXT NOT NULL,
    outcomes     TEXT NOT NULL,
    committed_at BIGINT NOT NULL
);
CREATE INDEX requests_committed ON requests (committed_at);
