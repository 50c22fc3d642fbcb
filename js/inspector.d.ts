import type { RunStore, SyncProgress } from './index.js';
import type { RunStoreCore } from '../pkg/runstore.js';
import type { Change } from './index.js';

/** What the inspector reads: a RunStore, or what `coreStore` and `connectCore` give. */
export type InspectedStore = RunStore | CoreStore;

/** The part of runstore/workflow's engine the inspector calls (a `WorkflowEngine`, or `connectCore`'s). */
export interface InspectedEngine {
  readonly device: string;
  signal(workflowId: string, name: string, payload?: unknown, options?: { signalId?: string }): Promise<{ signalId: string; duplicate: boolean }>;
  cancel(workflowId: string, options?: { reason?: string }): Promise<void>;
  /** When given, a failed or cancelled workflow can be run again. */
  retry?(workflowId: string): Promise<unknown>;
}

/** The views, as the `view` and `views` attributes name them. */
export type InspectorView = 'workflows' | 'effects' | 'outbox' | 'timers' | 'checkpoints' | 'conversations' | 'changes' | 'sync' | 'store';

/**
 * `<runstore-inspector>`: what a store holds (workflows with their timelines, the effect ledger,
 * the outbox, timers, checkpoints, artifacts, conversations, change notices, sync), live, and
 * actions on it, each after a confirmation. Attributes: `view` (the view shown), `views` (the
 * views offered, space- or comma-separated; one alone shows no tabs), `readonly` (no write
 * action offered), `theme` (`light` or `dark`; default: as the system prefers).
 */
export declare class RunStoreInspector extends HTMLElement {
  /** The store shown. A RunStoreCore is wrapped with `coreStore` as it is set. */
  get store(): InspectedStore | null;
  set store(store: InspectedStore | RunStoreCore | null);
  /** The engine on the same store; with it, running workflows can be signalled and cancelled, and ended ones run again. */
  engine: InspectedEngine | null;
  /** The sync the app runs, as given to `store.sync` (the token is not needed): shows its status. */
  sync: { url: string; namespace?: string } | null;
  /** Pass as `store.sync`'s `onProgress` (or call from it): the last push, pull and failure. */
  readonly syncProgress: (progress: SyncProgress) => void;
  /** The view shown. */
  view: InspectorView;
  /** Resolves once the workflow list first showed the store's workflows (or that there are none). */
  readonly ready: Promise<void>;
  /** Shows workflow `workflowId` in the workflows view. */
  select(workflowId: string): void;
}

/** RunStoreCore's methods as a RunStore has them: each returns a Promise. */
type Promised<T> = {
  [K in keyof T as K extends string ? K : never]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never;
};

/** A RunStoreCore as the inspector reads it (`coreStore`). */
export interface CoreStore extends Promised<Omit<RunStoreCore, 'free' | 'close' | 'flush' | 'persistence'>> {
  readonly persistence: string;
  /** Tells of each commit made through this object or by a runstore/workflow engine on the core; returns the unsubscribe function. */
  subscribe(filter: { areas?: string[] | null; workflowIds?: string[] | null } | null | undefined, callback: (change: Change) => void): () => void;
  /** Tells the subscribers of a write made on the core directly (by default: every area changed). */
  changed(change?: Partial<Change>): void;
}

/**
 * `core` as the inspector reads a store: its methods return Promises, and `subscribe` tells of
 * the commits made through the returned object and by runstore/workflow engines on `core`.
 */
export declare function coreStore(core: RunStoreCore): CoreStore;

/** A MessagePort, a Worker or a worker's global scope. */
export interface PortLike {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
  start?(): void;
}

/**
 * In a worker: serves `core` (and `engine`'s signal, cancel, retry and describe) to `connectCore` at the
 * other end of `port`. Returns the `coreStore` of `core`; call its `changed()` after writes made
 * on `core` directly.
 */
export declare function exposeCore(core: RunStoreCore, port: PortLike, options?: { engine?: InspectedEngine | null }): CoreStore;

/** In the page: the store (and engine, if one was exposed) served by `exposeCore` at the other end of `port`. */
export declare function connectCore(port: PortLike): Promise<{ store: CoreStore; engine: InspectedEngine | null }>;

declare global {
  interface HTMLElementTagNameMap {
    'runstore-inspector': RunStoreInspector;
  }
}
