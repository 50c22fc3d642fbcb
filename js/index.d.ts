import type { RunStoreCore } from '../pkg/runstore.js';
import type { Area, Change, OpenOptions, Operation, Step, StepOutcome, StorageEstimate, StoredEvent } from './types.js';

export * from './types.js';

/** Every code a RunStoreError can carry. */
export type ErrorCodeName =
  | 'SEQUENCE_CONFLICT'
  | 'CONFLICT'
  | 'IDEMPOTENCY_CONFLICT'
  | 'NOT_FOUND'
  | 'INVALID_INPUT'
  | 'SERIALIZATION'
  | 'SCHEMA_TOO_NEW'
  | 'BUSY'
  | 'STORAGE_FULL'
  | 'OPFS_UNAVAILABLE'
  | 'CORRUPT'
  | 'BACKEND'
  | 'UNAVAILABLE'
  | 'UNAUTHORIZED'
  /** An encrypted store opened with a key not its own or without one, or a plain store opened with a key. */
  | 'WRONG_KEY'
  /** A sync push to a workflow leased on the server by another holder, under an older epoch, or without the lease. */
  | 'FENCED'
  /** The sync server's lease on the workflow is held by another device (its `holder`, `epoch`, `expiresInMs`). */
  | 'LEASE_HELD'
  /** runstore/workflow: a run whose code no longer replays its history. */
  | 'NON_DETERMINISM'
  /** runstore/workflow: a `once` step whose attempt may or may not have run. */
  | 'OUTCOME_UNKNOWN'
  /** runstore/workflow: a step that failed its last attempt (the body's error is `cause`). */
  | 'STEP_FAILED'
  /** runstore/workflow: a run that failed, as `result()` reports it (its error is `cause`). */
  | 'WORKFLOW_FAILED'
  /** runstore/workflow: a run that was cancelled. */
  | 'CANCELLED';

export declare const ErrorCode: Readonly<{ [K in ErrorCodeName]: K }>;

/**
 * What every call rejects with: an Error with a stable `code` and the failure's fields, for
 * example `expected` and `actual` (numbers) on `SEQUENCE_CONFLICT`, `field` on `INVALID_INPUT`.
 */
export declare class RunStoreError extends Error {
  constructor(code: ErrorCodeName, message: string, fields?: Record<string, unknown>);
  readonly name: 'RunStoreError';
  readonly code: ErrorCodeName;
  /** SEQUENCE_CONFLICT: the workflow. */
  readonly workflowId?: string;
  /**
   * SEQUENCE_CONFLICT: the head the caller expected; CONFLICT: the revision (claim token,
   * visibility head) it expected (null: none).
   */
  readonly expected?: number | null;
  /** SEQUENCE_CONFLICT: the stored head; CONFLICT: the stored revision (null: absent). */
  readonly actual?: number | null;
  /** CONFLICT, IDEMPOTENCY_CONFLICT, NOT_FOUND: what kind of record, and which. */
  readonly entity?: string;
  readonly id?: string;
  /** CONFLICT on a workflow's lifecycle: the refused event and the run's status. */
  readonly event?: string;
  readonly status?: string;
  /** IDEMPOTENCY_CONFLICT: the key and the record that holds it. */
  readonly key?: string;
  readonly owner?: string;
  /** INVALID_INPUT: the argument (and path inside it) that was refused. */
  readonly field?: string;
  /** SCHEMA_TOO_NEW: the database's schema version and the newest this code reads. */
  readonly found?: number;
  readonly supported?: number;
  /** Any code, from `commit`: the index of the step's operation that failed. */
  readonly operation?: number;
  /** A sync's SEQUENCE_CONFLICT: this store's head, the server's, and the server's events after `expected`. */
  readonly localHead?: number;
  readonly serverHead?: number;
  readonly serverEvents?: StoredEvent[];
  /** Whether `serverEvents` holds all of them (a server sends at most 1000, and at most its answer's bytes). */
  readonly serverEventsComplete?: boolean;
  /** A sync's SEQUENCE_CONFLICT for a workflow purged here and written again under its id. */
  readonly purged?: boolean;
  /** A sync's FENCED: the lease the push was made under (absent, or null, for none). */
  readonly holder?: string;
  readonly epoch?: number | null;
  /** A sync's FENCED: the server's lease on the workflow (absent, or null, when there is none). */
  readonly currentHolder?: string;
  readonly currentEpoch?: number | null;
  /** LEASE_HELD: how long the other holder's lease lasts from now, by the server's clock. */
  readonly expiresInMs?: number;
  /** An error a sync server answered with: its HTTP status. */
  readonly httpStatus?: number;
  /** BACKEND or UNAVAILABLE from a sync server: the error code it answered, one this package does not know (null: none). */
  readonly serverCode?: string | null;
  /** UNAVAILABLE, or BACKEND from a store whose wasm trapped: the request id of the write whose outcome is unknown (null for a read); ask `requestOutcome` later. */
  readonly requestId?: string | null;
  /** BACKEND: the store's WebAssembly trapped (an engine fault or a panic); see the error table in docs/browser-apps.md. */
  readonly trapped?: boolean;
}

/** Options of `RunStore.open`: the store's own, and how this client shares it with other tabs. */
export interface ClientOpenOptions extends OpenOptions {
  /**
   * `true`: this client holds the persistent store alone, as `RunStoreCore` does: another
   * tab or worker opening it gets BUSY. `false` (default): every tab of the origin that opens the
   * store by this name shares it. (A memory store is always private to its client.)
   */
  exclusive?: boolean;
  /**
   * A shared store's call that no leader answered in this many milliseconds (default 30000)
   * rejects with UNAVAILABLE carrying its `requestId`.
   */
  requestTimeoutMs?: number;
}

/** Which changes a subscriber hears of: all given conditions must match; absent ones match anything. */
export interface ChangeFilter {
  /** Any of these areas. */
  areas?: Area[] | null;
  /** Any of these workflows. */
  workflowIds?: string[] | null;
}

/**
 * The store's methods: every string-named method of RunStoreCore but its lifecycle ones and
 * `flush` (the client stores each write before it answers it). `commit`, whose type is
 * generic, is declared on RunStore itself: a mapped type would lose its type parameter.
 */
type StoreMethods = Omit<RunStoreCore, 'free' | 'close' | 'flush' | 'persistence' | 'commit'>;
type Promised<T> = {
  [K in keyof T as K extends string ? K : never]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<R>
    : never;
};

/** A store running in a dedicated worker; every method of RunStoreCore, returning a Promise. */
export interface RunStore extends Promised<StoreMethods> {}

export declare class RunStore {
  private constructor();
  /**
   * Opens (creating if needed) the store `name`. A persistent store (OPFS, IndexedDB, or
   * `persistence: "auto"`, the default) is shared by every tab of the origin that opens it: the
   * leader (chosen by a queued Web Lock) runs it in its dedicated worker, the others' calls go
   * to it; when the leader goes away the next tab takes over and unanswered calls are sent
   * again, as they were when called, under their request ids. With `exclusive: true` this
   * client holds it alone and another opener gets BUSY. A memory store is private.
   *
   * Rejects with INVALID_INPUT for a name or options the store refuses (in every tab, the
   * store's own checks decide), with UNAVAILABLE when no tab could open the store within
   * `requestTimeoutMs`, and with OPFS_UNAVAILABLE when the persistence asked for (`"opfs"`,
   * `"indexeddb"`) does not exist here. A store in a file (Node, `persistence: "file"` and a
   * `directory`) is this client's alone: another opener, in this process or another, gets BUSY.
   */
  static open(name: string, options?: ClientOpenOptions): Promise<RunStore>;
  /**
   * Applies every operation of the step in one transaction: all commit or none. A failing
   * operation rejects with its own code and `operation`, its index; nothing is written. Under a
   * `requestId` that committed before, nothing is applied and the recorded outcomes come back
   * with `replayed: true`. For a step written in the call, each outcome has its operation's type.
   */
  commit<O extends Operation[] | []>(step: Step<O>): Promise<StepOutcome<O>>;
  /**
   * Where the store keeps its database: `"opfs"`, `"indexeddb"`, `"memory"` or (in Node)
   * `"file"` (what `persistence: "auto"` took; for a shared store, what its leader's worker
   * took). Every write is stored there before its promise resolves.
   */
  readonly persistence: 'opfs' | 'indexeddb' | 'memory' | 'file';
  /** Whether this tab runs the database now (always true for an exclusive or memory store). */
  readonly isLeader: boolean;
  /** Calls `callback` when this tab becomes or stops being the leader; returns the unsubscribe function. */
  onLeaderChange(callback: (isLeader: boolean) => void): () => void;
  /**
   * Calls `callback` after each commit (from any tab) that matches `filter`, once per request
   * id; returns the unsubscribe function. The filter is read once. Throws a RunStoreError
   * INVALID_INPUT (field `filter...` or `callback`) for a bad filter or callback.
   */
  subscribe(filter: ChangeFilter | null | undefined, callback: (change: Change) => void): () => void;
  /**
   * Syncs the journal with a runstore sync server: pushes the appends the server lacks under
   * the head both agreed on, pulls the server's, per workflow, and keeps what both agree on in
   * the store (a checkpoint per server and namespace). A workflow written on both sides is not
   * merged: it is in `conflicts` as a SEQUENCE_CONFLICT with both heads and the server's
   * events. Rejects with UNAVAILABLE when the server cannot be reached (nothing is lost: the
   * next sync goes on from there) or when the page cannot load the sync code, which the first
   * call loads (offline before its first sync), UNAUTHORIZED for a token not granted the
   * namespace, INVALID_INPUT for bad options. With `live: true` it keeps syncing until
   * `signal` aborts.
   */
  sync(options: SyncOptions): Promise<SyncSummary>;
  /**
   * Closes this client; a leader hands the store to the next tab. Calls in flight settle first
   * (answered, or UNAVAILABLE with their `requestId` after 3 s); later calls reject.
   */
  close(): Promise<void>;
}

/**
 * The origin's storage use and quota in bytes (every store's files included), from
 * `navigator.storage.estimate()`. OPFS_UNAVAILABLE where the context has none.
 */
export declare function storageEstimate(): Promise<StorageEstimate>;

/**
 * Asks the browser to keep the origin's storage instead of evicting it under pressure
 * (`navigator.storage.persist()`); resolves to whether it will. Only on a page: in a worker it
 * rejects with OPFS_UNAVAILABLE.
 */
export declare function requestPersistence(): Promise<boolean>;

/** Options of `store.sync`. */
export interface SyncOptions {
  /** The sync server's base URL, for example `https://sync.example.com`. */
  url: string;
  /** A bearer token the server grants `namespace`. */
  token: string;
  /** The server namespace this store's workflows sync with (default `"default"`): 1 to 64 ASCII letters, digits, `-`, `_`, `.`. */
  namespace?: string;
  /** Ends the sync (a live one resolves; a single pass rejects with the signal's reason). */
  signal?: AbortSignal | null;
  /** `true`: sync again whenever the server or this store has new events, until `signal` aborts; failures are reported to `onProgress` and retried with backoff. */
  live?: boolean;
  /** Told of each workflow pushed or pulled, each conflict, each finished pass and (live) each failed pass. */
  onProgress?: (progress: SyncProgress) => void;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** `true`: pull back the server's whole history of workflows purged here (and not written again since); by default a purged workflow stays purged. */
  restorePurged?: boolean;
  /**
   * The lease on the server each workflow's push is made under (docs/servers.md, "Leases"), or
   * null for none. A push to a workflow the server holds leased by another holder, under an
   * older epoch or without its lease is not applied: it is reported in `conflicts` as FENCED.
   * The function may return a Promise (as `engine.leases` of `runstore/workflow` does).
   */
  leases?: ((workflowId: string) => SyncLease | null | undefined | Promise<SyncLease | null | undefined>) | null;
}

/** The lease a push is made under: the holder's name and the epoch the server gave it. */
export interface SyncLease {
  holder: string;
  epoch: number;
}

/** What `onProgress` is told. */
export type SyncProgress =
  | { type: 'pushed' | 'pulled'; workflowId: string; events: number; head: number }
  | { type: 'conflict'; workflowId: string; error: RunStoreError }
  | { type: 'synced'; summary: SyncSummary }
  | { type: 'error'; error: RunStoreError };

/** What one sync pass did. */
export interface SyncSummary {
  pushed: { workflows: number; events: number };
  pulled: { workflows: number; events: number };
  /**
   * Workflows written here and on the server since they last agreed, left as they are: each a
   * SEQUENCE_CONFLICT with `workflowId`, `expected` (the head both agreed on), `localHead`,
   * `serverHead` (also `actual`) and `serverEvents` (the server's events after `expected`).
   * Workflows whose push was fenced by the server's lease: each a FENCED with `workflowId`,
   * `holder` and `epoch` (what it was pushed under), `currentHolder` and `currentEpoch` (the
   * server's lease), each absent or null for none.
   */
  conflicts: RunStoreError[];
  /** Where this store is in the namespace's change feed. */
  cursor: number;
}
