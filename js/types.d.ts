// The data model of runstore, as plain JS values. Times are milliseconds since the Unix epoch
// (what Date.now() returns); counts, sequences and revisions are non-negative safe integers;
// bytes are Uint8Array; JSON payloads are any JSON-compatible value.

/** Any value JSON can represent (no NaN, Infinity, undefined, functions or lone surrogates). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Options of `RunStore.open`. */
export interface OpenOptions {
  /** `"opfs"`: persisted in the origin private file system (dedicated worker); `"memory"`: gone on close. */
  persistence: 'opfs' | 'memory';
  /** `"full"` (default): a returned commit survives a crash and a power loss. `"relaxed"`: it survives a crash of the tab or worker; a power loss may drop the last commits. */
  durability?: 'full' | 'relaxed';
}

// ----- paging -----

/**
 * Which page of a listing to read. Every listing is paged: at most `limit` items (default
 * 1000, at most 10000; 0 or more than 10000 is INVALID_INPUT), after `cursor`, the `nextCursor` of the
 * previous page of the same listing with the same arguments (any other string is
 * INVALID_INPUT). A cursor is a position, valid across writes.
 */
export interface PageRequest {
  limit?: number | null;
  cursor?: string | null;
}

/** One page of a listing, in the listing's order. */
export interface Page<T> {
  items: T[];
  /** Pass it back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

// ----- workflow event journal -----

/** What happened. Lifecycle types drive the status projection; `custom` is anything else. */
export type EventKind =
  | { type: 'started'; workflowType: string; runId: string }
  | { type: 'completed' }
  | { type: 'failed'; reason: string }
  | { type: 'cancelled' }
  | { type: 'paused' }
  | { type: 'resumed' }
  | { type: 'continuedAsNew'; nextRunId: string }
  | { type: 'custom'; name: string };

/** A journal event: its kind's fields, when it happened, and the engine's payload. */
export type Event = EventKind & { recordedAt: number; data?: Json };

/** An event read back, with its sequence number (1, 2, ... per workflow). */
export type StoredEvent = EventKind & { seq: number; recordedAt: number; data: Json };

export type WorkflowStatus =
  | 'pending'
  | 'running'
  | 'paused'
  | 'continuedAsNew'
  | 'completed'
  | 'failed'
  | 'cancelled';

export interface WorkflowSummary {
  workflowId: string;
  status: WorkflowStatus;
  head: number;
  workflowType: string | null;
  runId: string | null;
  startedAt: number | null;
  closedAt: number | null;
  updatedAt: number;
}

export interface WorkflowQuery {
  status?: WorkflowStatus | null;
  workflowType?: string | null;
  /** Started at or after. */
  startedAfter?: number | null;
  /** Started before. */
  startedBefore?: number | null;
}

export interface RunSummary {
  runId: string;
  workflowType: string;
  firstSeq: number;
  lastSeq: number;
  status: WorkflowStatus;
  startedAt: number;
  closedAt: number | null;
}

export interface UndecodableEvent {
  workflowId: string;
  seq: number;
  reason: string;
}

// ----- durable timers -----

export interface Timer {
  workflowId: string;
  timerId: string;
  fireAt: number;
}

// ----- outbox -----

export type OutboxStatus = 'pending' | 'claimed' | 'done' | 'failed' | 'cancelled';

export interface NewOutboxRow {
  /** Unique; a row whose key exists is ignored on insert. */
  dispatchKey: string;
  workflowId: string;
  ordinal: number;
  activityType: string;
  input: Uint8Array;
  /** Not claimable before this time. */
  visibleAfter: number;
  attempt?: number;
  runId?: string | null;
  namespace?: string | null;
  taskQueue?: string | null;
  node?: string | null;
}

export interface OutboxRow {
  dispatchKey: string;
  workflowId: string;
  ordinal: number;
  activityType: string;
  input: Uint8Array;
  status: OutboxStatus;
  attempt: number;
  visibleAfter: number;
  claimedAt: number | null;
  runId: string | null;
  namespace: string | null;
  taskQueue: string | null;
  node: string | null;
}

export interface OutboxRowState {
  status: OutboxStatus;
  attempt: number;
  visibleAfter: number;
  claimedAt: number | null;
}

/** A route; in a claim filter, an absent or null field matches any value. */
export interface ClaimScope {
  namespace?: string | null;
  taskQueue?: string | null;
  node?: string | null;
}

export interface ClaimFilter {
  /** Rows of these workflows are left alone (for example paused ones). */
  excludeWorkflows?: string[];
  scope?: ClaimScope | null;
}

export interface NamespaceLoad {
  inFlight: number;
  claimed: number;
}

// ----- visibility -----

export interface VisibilityRecord {
  workflowId: string;
  runId: string;
  workflowType: string;
  status: string;
  startTime: number;
  closeTime?: number | null;
  failedStep?: string | null;
  failureReason?: string | null;
  /** A JSON object of searchable attributes. */
  searchAttributes?: { [key: string]: Json };
}

export interface TimeRange {
  /** Inclusive. */
  from?: number | null;
  /** Exclusive. */
  before?: number | null;
}

export type AttributeOp = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'exists' | 'notExists';

export interface AttributePredicate {
  key: string;
  op: AttributeOp;
  /** The value to compare with (an array for `in`; absent for `exists` and `notExists`). */
  value?: Json;
}

export interface VisibilityFilter {
  workflowType?: string | null;
  /** Any of these statuses. */
  statuses?: string[];
  startTime?: TimeRange | null;
  closeTime?: TimeRange | null;
  search?: AttributePredicate[];
}

export interface VisibilityPage {
  records: Required<VisibilityRecord>[];
  /** Pass it back for the next page; null on the last page. */
  nextCursor: string | null;
}

// ----- namespaces -----

export type NamespaceOrigin = 'worker' | 'start' | 'explicit' | 'inferred';
export type NamespaceState = 'active' | 'deprecated';
export type RegisterOutcome = 'created' | 'existed';

export interface NamespaceRecord {
  name: string;
  origin: NamespaceOrigin;
  state: NamespaceState;
  placement?: Json;
  createdAt: number;
  lastSeen: number;
}

// ----- packages -----

export interface PackageRecord {
  workflowType: string;
  /** Lower-case hex, 8 to 128 digits. */
  contentHash: string;
  archive: Uint8Array;
  deployedAt: number;
}

/** A package as listings give it: without its archive (read it with `getPackage`). */
export interface PackageMeta {
  workflowType: string;
  contentHash: string;
  /** The archive's length in bytes. */
  sizeBytes: number;
  deployedAt: number;
}

export interface PackageRoute {
  workflowType: string;
  contentHash: string;
}

// ----- checkpoints -----

export interface Checkpoint {
  checkpointId: string;
  runId?: string | null;
  /** 0 when created; each compare-and-swap writes the stored revision + 1. */
  revision: number;
  state: Json;
  updatedAt: number;
}

// ----- effects -----

export type EffectStatusKind = 'prepared' | 'started' | 'completed' | 'failed' | 'outcomeUnknown';

export type EffectStatus =
  | { type: 'prepared' }
  | { type: 'started' }
  | { type: 'completed'; output: Json }
  | { type: 'failed'; error: string }
  | { type: 'outcomeUnknown' };

export interface EffectRecord {
  effectId: string;
  capabilityId: string;
  idempotencyKey?: string | null;
  revision: number;
  request: Json;
  status: EffectStatus;
  updatedAt: number;
}

// ----- run journal -----

export interface RunEvent {
  eventId: string;
  runId: string;
  sequence: number;
  recordedAt: number;
  data?: Json;
}

// ----- artifacts -----

export interface NewArtifact {
  scope: string;
  mediaType: string;
  name?: string | null;
  bytes: Uint8Array;
  expiresAt?: number | null;
  idempotencyKey?: string | null;
}

export interface ArtifactMeta {
  scope: string;
  artifactId: string;
  mediaType: string;
  name: string | null;
  sizeBytes: number;
  /** Lower-case hex SHA-256 of the bytes. */
  sha256: string;
  idempotencyKey: string | null;
  createdAt: number;
  expiresAt: number | null;
}

export interface Artifact extends ArtifactMeta {
  bytes: Uint8Array;
}

// ----- conversation state -----

export interface ConversationState {
  conversationId: string;
  revision: number;
  formatVersion: number;
  state: Uint8Array;
  updatedAt: number;
}

// ----- retention and space -----

/** What one `purgeWorkflows` call deleted, per table. */
export interface PurgeCounts {
  workflows: number;
  events: number;
  /** Outbox rows of any status. */
  outboxRows: number;
  timers: number;
  visibilityRecords: number;
  /** Whether closed workflows older than the time remain: call again. */
  more: boolean;
}

/** The database's size: `pageSize * pageCount` bytes, `freelistCount` pages of them free. */
export interface StorageStats {
  pageSize: number;
  pageCount: number;
  freelistCount: number;
  /** Whether freed pages go back to the file system (databases created since schema version 2, or after `vacuum`). */
  incrementalVacuum: boolean;
}

/** The origin's storage use and quota in bytes, as `navigator.storage.estimate()` reports them. */
export interface StorageEstimate {
  usage: number;
  quota: number;
}
