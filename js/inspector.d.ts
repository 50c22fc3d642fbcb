import type { RunStore, SyncProgress } from './index.js';
import type { RunStoreCore } from '../pkg/runstore.js';
import type { Change } from './index.js';

/** What the inspector reads: a RunStore, or what `coreStore`, `connectCore` and `syncServerStore` give. */
export type InspectedStore = RunStore | CoreStore | ServerStore;

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

/** The writes a `ServerStore` leaves out. */
type StoreWrites =
  | 'append' | 'appendWithOutbox' | 'insertOutbox' | 'claimOutbox' | 'completeOutbox' | 'completeOutboxBatch' | 'retryOutbox'
  | 'failOutbox' | 'cancelWorkflowOutbox' | 'rearmStaleClaims' | 'scheduleTimer' | 'cancelTimer' | 'compareAndSwapCheckpoint'
  | 'compareAndSwapEffect' | 'upsertVisibility' | 'recordRunEvent' | 'saveConversation' | 'putArtifact' | 'deleteArtifact'
  | 'purgeExpiredArtifacts' | 'purgeWorkflows' | 'registerNamespace' | 'putNamespace' | 'setNamespacePlacement'
  | 'deprecateNamespace' | 'putPackage' | 'putPackageForTypes' | 'deletePackage' | 'setPackageRoute' | 'commit'
  | 'importDatabase' | 'vacuum' | 'changed';

/**
 * A read-only copy of a sync server's namespace in this page (`syncServerStore`): the store's
 * reads, no write. The inspector shows it with its actions off (exports excepted), the views a
 * journal fills, and its sync's failures in its toast and Sync view.
 */
export interface ServerStore extends Omit<CoreStore, StoreWrites> {
  readonly readOnly: true;
  /** The server and namespace copied (the token is not kept here). */
  readonly server: { readonly url: string; readonly namespace: string };
  /** Tells of the copy's sync as `store.sync`'s `onProgress` hears it; a failure before the call is told at once. Returns the unsubscribe function. */
  subscribeSync(callback: (progress: SyncProgress) => void): () => void;
  /** Ends following the server for good; resolves once its long-poll ended. What was pulled stays readable. */
  stop(): Promise<void>;
}

/**
 * A read-only copy of namespace `namespace` (default `"default"`) of the sync server at `url`,
 * read with `token`, kept in a memory store in this page: it pulls the namespace's journals
 * and follows the server's change feed while something subscribes to it (an inspector, from
 * when it is added to the page until it is removed), and writes each workflow's visibility
 * record from its journal. Rejects with INVALID_INPUT naming `options.<field>` for bad options;
 * the server's answers (UNAUTHORIZED for a token it refuses, UNAVAILABLE offline) go to
 * `subscribeSync`, and the sync tries again with backoff.
 */
export declare function syncServerStore(options: { url: string; token: string; namespace?: string; fetch?: typeof fetch }): Promise<ServerStore>;

declare global {
  interface HTMLElementTagNameMap {
    'runstore-inspector': RunStoreInspector;
  }
}
