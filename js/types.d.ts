// The data model of runstore, as plain JS values. Times are milliseconds since the Unix epoch
// (what Date.now() returns); counts, sequences and revisions are non-negative safe integers;
// bytes are Uint8Array; JSON payloads are any JSON-compatible value.

/** Any value JSON can represent (no NaN, Infinity, undefined, functions or lone surrogates). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Bytes the store answers with: a Uint8Array over an ArrayBuffer of its own, never a shared
 * one, which a `Blob` or a `Response` takes as it is. (Said as what `slice` returns: in
 * TypeScript 5.7 and later that is `Uint8Array<ArrayBuffer>`, before it `Uint8Array`.)
 */
export type StoredBytes = ReturnType<Uint8Array['slice']>;

/**
 * Where a store keeps its database. `"opfs"`: the origin private file system through sync
 * access handles (dedicated workers only; OPFS_UNAVAILABLE elsewhere). `"indexeddb"`: held in
 * memory and stored in IndexedDB (any context with IndexedDB). `"memory"`: gone on close.
 * `"file"`: the SQLite file `<directory>/<name>.db`, through Node's file calls (Node 20.16+,
 * Bun, Electron's main process; INVALID_INPUT in a browser). `"auto"`: a file when a
 * `directory` is given, else OPFS where it exists, else IndexedDB, else memory.
 */
export type Persistence = 'opfs' | 'indexeddb' | 'memory' | 'file' | 'auto';

/** Options of `RunStore.open`. */
export interface OpenOptions {
  /** Where the database lives (default `"auto"`); the store's `persistence` says what it took. */
  persistence?: Persistence;
  /**
   * The directory of a store in a file (`persistence: "file"`, or `"auto"`, which then takes a
   * file): created if missing, relative to the working directory. The store holds
   * `<name>.db`, its WAL `<name>.db-wal` and, while open, the lock file `<name>.db.lock` that
   * answers another opener (another process, or this one) with BUSY.
   */
  directory?: string;
  /** `"full"` (default): a returned commit survives a crash and a power loss. `"relaxed"`: it survives a crash of the tab or worker; a power loss may drop the last commits. */
  durability?: 'full' | 'relaxed';
  /**
   * The key of an encrypted store (SQLCipher: AES-256, every page authenticated): a
   * passphrase (stretched with PBKDF2-HMAC-SHA512, 256,000 rounds, at every open) or a
   * `Uint8Array` of 32 random bytes (used as they are). A new store is created encrypted; an
   * existing one opens only with its own key, else WRONG_KEY and nothing is written. A plain
   * store opened with a key, and an encrypted one opened without, are WRONG_KEY too. Tabs that
   * share a store give the same key, in the same form. A memory store is never stored: a key
   * with `"memory"` (or `"auto"` falling back to it) is INVALID_INPUT.
   */
  key?: string | Uint8Array;
}

/** What `rekey` reports while it encrypts a plain store. */
export interface RekeyOptions {
  /**
   * Called as a plain store's rows are copied into its encrypted file and back: `done` of
   * `total` rows (both copies count), `done === total` at the end. Not called when an
   * encrypted store's key changes (that is one step). A callback that throws does not stop it.
   */
  onProgress?: ((progress: { done: number; total: number }) => void) | null;
}

/** How `exportDatabase` writes the file. */
export interface ExportOptions {
  /** An encrypted store's content as a plain SQLite file, readable by whoever holds it (default false: encrypted with the store's key). */
  plain?: boolean | null;
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

/**
 * What happened. Lifecycle types drive the status projection; `custom` is anything else. Each
 * kind's fields are its own: `event.name` reads on any event (a string on a `custom` one,
 * undefined on the others, as in JS), and checking `type` narrows to one kind.
 */
export type EventKind = OwnFields<
  | { type: 'started'; workflowType: string; runId: string }
  | { type: 'completed' }
  | { type: 'failed'; reason: string }
  | { type: 'cancelled' }
  | { type: 'paused' }
  | { type: 'resumed' }
  | { type: 'continuedAsNew'; nextRunId: string }
  | { type: 'custom'; name: string }
>;

/** Each member of the union `U`, with the other members' fields as absent ones (`?: undefined`). */
export type OwnFields<U, All = U> = U extends unknown
  ? U & { [K in Exclude<All extends unknown ? keyof All : never, keyof U>]?: undefined }
  : never;

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
  /** Unique; a row whose key exists is ignored by insertOutbox and refused by appendWithOutbox. */
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
  /**
   * A re-arm or retry that would bring `attempt` to this value dead-letters the row instead;
   * at least 1 and above `attempt`. Absent or null: the store's default, 10.
   */
  maxAttempts?: number | null;
}

/** A claim as a dispatcher holds it: settle the row with the token its claim handed out. */
export interface OutboxClaim {
  dispatchKey: string;
  claimToken: number;
}

export interface OutboxRow {
  dispatchKey: string;
  workflowId: string;
  ordinal: number;
  activityType: string;
  input: StoredBytes;
  status: OutboxStatus;
  attempt: number;
  visibleAfter: number;
  claimedAt: number | null;
  /** The token of the row's last claim (0 before its first); settlements must name it. */
  claimToken: number;
  maxAttempts: number;
  /** Why the row is a dead letter (the reason given to failOutbox, or the attempts it ran out of). */
  deadReason: string | null;
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
  claimToken: number;
  maxAttempts: number;
  deadReason: string | null;
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
  /**
   * The journal head this record reflects: an upsert with a lower head than the stored one is
   * CONFLICT. Without heads on both sides, an older run or a closed run reopened is CONFLICT.
   */
  head?: number | null;
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
  bytes: StoredBytes;
}

// ----- conversation state -----

export interface ConversationState {
  conversationId: string;
  revision: number;
  formatVersion: number;
  state: Uint8Array;
  updatedAt: number;
}

// ----- steps and the request log -----

/**
 * One write as data, tagged by `op`. Each has the semantics and errors of the store method of
 * the same name.
 */
export type Operation =
  | { op: 'append'; workflowId: string; events: Event[]; expectedSeq: number; outbox?: NewOutboxRow[] }
  | { op: 'insertOutbox'; rows: NewOutboxRow[] }
  | { op: 'claimOutbox'; now: number; limit: number; filter?: ClaimFilter }
  | { op: 'completeOutbox'; dispatchKey: string; claimToken: number }
  | { op: 'completeOutboxBatch'; claims: OutboxClaim[] }
  | { op: 'retryOutbox'; dispatchKey: string; claimToken: number; nextAttempt: number; visibleAfter: number }
  | { op: 'failOutbox'; dispatchKey: string; claimToken: number; reason: string }
  | { op: 'cancelWorkflowOutbox'; workflowId: string }
  | { op: 'rearmStaleClaims'; olderThan: number; visibleAfter: number; limit: number }
  | { op: 'scheduleTimer'; workflowId: string; timerId: string; fireAt: number }
  | { op: 'cancelTimer'; workflowId: string; timerId: string }
  | { op: 'compareAndSwapCheckpoint'; checkpoint: Checkpoint; expectedRevision?: number | null }
  | { op: 'compareAndSwapEffect'; record: EffectRecord; expectedRevision?: number | null }
  | { op: 'upsertVisibility'; record: VisibilityRecord }
  | { op: 'recordRunEvent'; event: RunEvent }
  | { op: 'saveConversation'; state: ConversationState; expectedRevision?: number | null }
  | { op: 'putArtifact'; artifact: NewArtifact; now: number }
  | { op: 'deleteArtifact'; scope: string; artifactId: string }
  | { op: 'purgeExpiredArtifacts'; now: number }
  | { op: 'purgeWorkflows'; closedBefore: number; limit: number }
  | { op: 'registerNamespace'; name: string; origin: NamespaceOrigin; now: number }
  | { op: 'putNamespace'; record: NamespaceRecord }
  | { op: 'setNamespacePlacement'; name: string; placement: Json }
  | { op: 'deprecateNamespace'; name: string }
  | { op: 'putPackage'; record: PackageRecord; memberTypes?: string[] | null }
  | { op: 'deletePackage'; workflowType: string; contentHash: string }
  | { op: 'setPackageRoute'; workflowType: string; contentHash: string }
  | { op: 'saveSync'; target: string; clientId: string; cursor?: CursorMove | null; mark?: number | null; heads?: SyncHeadUpdate[] };

/** What one operation did, tagged by the same `op`. */
export type OperationOutcome =
  | { op: 'append'; head: number }
  | { op: 'insertOutbox'; inserted: number }
  | { op: 'claimOutbox'; rows: OutboxRow[] }
  | { op: 'completeOutbox' }
  | { op: 'completeOutboxBatch' }
  | { op: 'retryOutbox'; status: OutboxStatus }
  | { op: 'failOutbox' }
  | { op: 'cancelWorkflowOutbox'; cancelled: string[] }
  | { op: 'rearmStaleClaims'; rows: OutboxRow[] }
  | { op: 'scheduleTimer' }
  | { op: 'cancelTimer'; removed: boolean }
  | { op: 'compareAndSwapCheckpoint'; revision: number }
  | { op: 'compareAndSwapEffect'; revision: number }
  | { op: 'upsertVisibility' }
  | { op: 'recordRunEvent' }
  | { op: 'saveConversation'; revision: number }
  | { op: 'putArtifact'; artifact: ArtifactMeta }
  | { op: 'deleteArtifact'; deleted: boolean }
  | { op: 'purgeExpiredArtifacts'; purged: number }
  | { op: 'purgeWorkflows'; counts: PurgeCounts }
  | { op: 'registerNamespace'; outcome: RegisterOutcome }
  | { op: 'putNamespace'; outcome: RegisterOutcome }
  | { op: 'setNamespacePlacement' }
  | { op: 'deprecateNamespace'; deprecated: boolean }
  | { op: 'putPackage' }
  | { op: 'deletePackage'; droppedRoutes: string[] }
  | { op: 'setPackageRoute' }
  | { op: 'saveSync' };

/**
 * Operations applied together in one transaction (at most 1000). `O` is their types: for a
 * step written in the `commit` call, the type of each one, in order.
 */
export interface Step<O extends readonly Operation[] = Operation[]> {
  /** Makes the step exactly-once: under an id that committed before, nothing is applied again. */
  requestId?: string | null;
  operations: O;
}

/** The outcome of an operation of type `O`: the member of `OperationOutcome` with its `op`. */
export type OutcomeOf<O> = O extends { op: infer K } ? Extract<OperationOutcome, { op: K }> : never;

export interface StepOutcome<O extends readonly Operation[] = Operation[]> {
  /**
   * One per operation, in order: for a step written in the `commit` call, each one typed as
   * its operation's outcome (`outcomes[0].head` of an `append`), else `OperationOutcome`s.
   */
  outcomes: { -readonly [K in keyof O]: OutcomeOf<O[K]> };
  /**
   * True when the request id had committed before: nothing was applied now. (A step without
   * its own `requestId`, which a shared store's client sends again after a tab hand-off,
   * answers false: its first sending applied it.)
   */
  replayed: boolean;
}

export interface RequestRecord {
  requestId: string;
  /** When it committed, by the store's clock. */
  committedAt: number;
  outcomes: OperationOutcome[];
}

/**
 * What the request log says of a request id (`requestOutcome`). The log keeps the latest
 * 10,000 ids for at most 7 days, so an id it does not hold either never committed or was
 * forgotten; it says which only as far as it knows.
 */
export type RequestOutcome =
  /** The request committed, with these outcomes. */
  | ({ status: 'committed' } & RequestRecord)
  /** No request under this id committed: the log has forgotten none. */
  | { status: 'notCommitted'; requestId: string }
  /**
   * Not in the log, which has forgotten requests committed up to `forgottenThrough` (the
   * store's clock, ms since the epoch): a request sent after that time did not commit; one
   * sent before may have committed and been forgotten.
   */
  | { status: 'unknown'; requestId: string; forgottenThrough: number };

// ----- sync state (kept by `store.sync`) -----

/** What the store and one sync target (a server's namespace) agree on (`syncTarget`). */
export interface SyncTarget {
  /** The client id the target's pushes are made under; null before the first sync. */
  clientId: string | null;
  /** Where the store is in the namespace's change feed. */
  cursor: number;
  /** Every local append up to this change mark was handled by a sync pass; null until a first pass over every workflow ended. */
  mark: number | null;
  /** The store's change mark now. */
  clock: number;
}

/** How a workflow stands with a target: in step, apart (a conflict), or purged here (a tombstone). */
export type SyncHeadState = 'synced' | 'conflict' | 'purged';

/** One workflow as a sync pass sees it. */
export interface SyncWorkflow {
  workflowId: string;
  localHead: number;
  /** The head the store and the target agree on (0: none). */
  syncedHead: number;
  /** null: never synced with the target. */
  state: SyncHeadState | null;
}

/** Which workflows `syncWorkflows` lists. */
export type SyncSelection =
  | { select: 'all' }
  | { select: 'changed'; after: number; through: number }
  | { select: 'inState'; state: SyncHeadState };

/** A move of one workflow's agreed head, applied only from `expected` (null: none yet). */
export interface SyncHeadUpdate {
  workflowId: string;
  expected?: number | null;
  head: number;
  state: SyncHeadState;
}

/** A move of a target's feed cursor, applied only from `from`. */
export interface CursorMove {
  from: number;
  to: number;
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

/** What a change notice can name. */
export type Area =
  | 'journal'
  | 'timers'
  | 'outbox'
  | 'visibility'
  | 'namespaces'
  | 'packages'
  | 'checkpoints'
  | 'effects'
  | 'runJournal'
  | 'artifacts'
  | 'conversations';

/**
 * What one commit changed, numbered in the store's change feed (`changesSince`) and told to
 * every tab after it committed (a write that changed nothing is neither). An `importDatabase`
 * that replaced the store names every area and no workflow ids. A write sent again after a
 * tab hand-off is told again when it replays (its first notice may have been lost with the
 * leader), without a number; each tab's subscribers hear each `requestId` once.
 */
export interface Change {
  /** Its number in the store's change feed: one more than the change committed before it. Absent in a notice of a write answered again from the request log, or of an import. */
  number?: number;
  /** True in the one notice a tab's subscribers get when the feed cannot say what the tab missed (it slept past the newest 10,000 changes, or an import replaced the store): read afresh. It matches every filter, names every area and no workflows, and carries the newest number. */
  reset?: true;
  /** The commit's request id (every write of a shared store has one; null for a private store's writes without one). */
  requestId: string | null;
  /** The areas written. */
  areas: Area[];
  /** The workflows written (events, timers, outbox rows inserted or cancelled, visibility). */
  workflowIds: string[];
  /** Each appended workflow's new head. */
  heads: { [workflowId: string]: number };
  /** New revisions of checkpoints, effects and conversations. */
  revisions: { kind: 'checkpoint' | 'effect' | 'conversation'; id: string; revision: number }[];
}

/** What the store's change feed holds after a number (`changesSince`). */
export interface ChangesSince {
  /** The changes after the number asked for, oldest first, each with its `number`; empty when `reset`. */
  changes: Change[];
  /** True when the feed cannot say what came after the number asked for (it keeps the newest 10,000 changes, an import replaced the store since, or the number is from another store): read what you show afresh, then follow from `newest`. */
  reset: boolean;
  /** The newest change's number (0 while nothing has changed). */
  newest: number;
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

// ----- export and import -----

/** What `importDatabase` did. */
export interface ImportOutcome {
  /** The file's schema version; an older file was migrated to the current one on the way in. */
  schemaVersion: number;
  /** True when the request id had imported this file already: nothing was done again. */
  replayed: boolean;
}
