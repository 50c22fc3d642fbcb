import type { RunStoreCore } from '../pkg/runstore.js';
import type { OpenOptions, StorageEstimate } from './types.js';

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
  | 'BACKEND';

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
}

/** The store's methods: every string-named method of RunStoreCore but its lifecycle ones. */
type StoreMethods = Omit<RunStoreCore, 'free' | 'close'>;
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
   * Opens (creating if needed) the store `name` in a new dedicated worker. On OPFS the store
   * holds its database alone: while it is open, another tab or worker opening the same name
   * gets a RunStoreError with code BUSY.
   */
  static open(name: string, options: OpenOptions): Promise<RunStore>;
  /** Closes the database, releases its files and lock, and ends the worker. */
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
