import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { RunStore } from './index.js';
import type { RunStoreCore } from './core.js';
import type { EffectRecord, Json } from './types.js';

/** A store a saver can write to: the main-thread client or the store itself (runstore/core). */
export type SaverStore = RunStore | RunStoreCore;

export interface RunStoreSaverOptions {
  /**
   * Where the saver's records live in the store's checkpoints area: ids and run ids start with
   * `prefix:` (default `"langgraph"`). Savers with different prefixes share a store without
   * seeing each other's threads.
   */
  prefix?: string;
  /** How values are serialized (default: LangGraph's JsonPlusSerializer). */
  serde?: SerializerProtocol;
}

/**
 * A LangGraph.js checkpointer on a runstore store: pass it as `checkpointer` to
 * `graph.compile({ checkpointer })`. Each `put`, `putWrites` and the first step of
 * `deleteThread` is one transaction of the store. Errors are `RunStoreError`s (INVALID_INPUT
 * for a config without `thread_id`, the store's codes otherwise).
 */
export declare class RunStoreSaver extends BaseCheckpointSaver {
  constructor(store: SaverStore, options?: RunStoreSaverOptions);
  /** The store this saver writes to. */
  readonly store: SaverStore;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
  /**
   * Removes the thread: one step makes every checkpoint and write of it invisible, then its
   * records are emptied (their state replaced by null; the store keeps each record's id).
   */
  deleteThread(threadId: string): Promise<void>;
}

export interface EffectCall<T> {
  /** The tool or service called. */
  capabilityId: string;
  /** One call: at most one is performed per capability and key (for a tool call, its id). */
  idempotencyKey: string;
  /** What is recorded as the call's request (JSON). */
  request?: Json;
  /**
   * Decides a call found cut off after it started (it may have reached the outside world);
   * what it returns becomes the recorded output. Without it such a call rejects with CONFLICT.
   */
  onOutcomeUnknown?: (record: EffectRecord) => T | Promise<T>;
}

/**
 * Performs `perform(request)` at most once per (capabilityId, idempotencyKey), recorded in the
 * store's effect ledger (`started`, then `completed` with the output or `failed`). A call
 * already completed returns its recorded output without running again; a failed one runs
 * again. The output must be JSON.
 */
export declare function runEffectOnce<T extends Json>(
  store: SaverStore,
  call: EffectCall<T>,
  perform: (request: Json) => T | Promise<T>,
): Promise<T>;
