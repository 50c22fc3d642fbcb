// <runstore-inspector>: a view of everything a store holds, for an app's developer. Give it a
// store (`store`: a RunStore, leader or follower tab, or a RunStoreCore, wrapped by coreStore
// when it has no `subscribe`), and optionally the runstore/workflow engine (`engine`) for
// signal and cancel, and the sync it runs (`sync`, `syncProgress`). It follows the store's
// change notices: whatever commits, in this tab or another, is read again where it shows.
// A copy of a sync server's namespace (syncServerStore, which the app makes and hands it) is
// shown read-only, with the views a journal can fill and its sync's failures told.
// Everything it draws is in its shadow root; it makes no network request.
import * as actions from './inspector-actions.js';
import { ChangesView } from './inspector-changes.js';
import { CheckpointsView } from './inspector-checkpoints.js';
import { ConversationsView } from './inspector-conversations.js';
import { coreStore } from './inspector-core.js';
import { Confirm } from './inspector-dialog.js';
import { html } from './inspector-html.js';
import { LedgerView } from './inspector-ledger.js';
import { morph } from './inspector-morph.js';
import { WorkflowList } from './inspector-list.js';
import { OutboxView } from './inspector-outbox.js';
import { RunView } from './inspector-run.js';
import { StoreView } from './inspector-store.js';
import { STYLE } from './inspector-style.js';
import { SyncView } from './inspector-sync.js';
import { TimersView } from './inspector-timers.js';

/** The views, in tab order: name, label, and the class that draws it. */
const VIEWS = [
  ['workflows', 'Workflows'],
  ['effects', 'Effects'],
  ['outbox', 'Outbox'],
  ['timers', 'Timers'],
  ['checkpoints', 'Checkpoints'],
  ['conversations', 'Conversations'],
  ['changes', 'Changes'],
  ['sync', 'Sync'],
  ['store', 'Store'],
];
const CLASSES = {
  effects: LedgerView,
  outbox: OutboxView,
  timers: TimersView,
  checkpoints: CheckpointsView,
  conversations: ConversationsView,
  changes: ChangesView,
  sync: SyncView,
  store: StoreView,
};
/**
 * The views a copy of a sync server's namespace (syncServerStore) can fill: the server holds
 * journals only, and the effect ledger, outbox, timers, checkpoints and conversations stay on
 * the devices.
 */
const SERVER_VIEWS = ['workflows', 'changes', 'sync', 'store'];
/** Changes heard within this long are read together. */
const BATCH_MS = 120;

/** A class to extend where there is no DOM (Node, a worker): the module loads, nothing is defined. */
const Base = globalThis.HTMLElement ?? class {};

export class RunStoreInspector extends Base {
  static get observedAttributes() {
    return ['view', 'views', 'readonly'];
  }

  #store = null;
  #engine = null;
  #sync = null;
  #root;
  #views = {};
  #list;
  #run;
  #confirm;
  #active = 'workflows';
  #unsubscribe = null;
  #unsubscribeSync = null;
  #dirty = new Set();
  #timer = null;
  #tick = null;
  #busy = false;
  #selected = null;
  #painted;
  #paint;
  #ctx;

  constructor() {
    super();
    this.#painted = new Promise((resolve) => (this.#paint = resolve));
    this.#root = this.attachShadow({ mode: 'open' });
    const element = this;
    this.#ctx = {
      get store() {
        return element.#store;
      },
      get engine() {
        return element.#engine;
      },
      get sync() {
        return element.#sync ?? element.#store?.server ?? null;
      },
      get readOnly() {
        return element.hasAttribute('readonly') || element.#store?.readOnly === true;
      },
      get selected() {
        return element.#selected;
      },
      get document() {
        return element.ownerDocument;
      },
      select: (id) => this.select(id),
      put: (el, markup) => this.#put(el, markup),
      painted: () => this.#paint(),
    };
    this.#build();
  }

  // ----- properties -----

  /** The store shown: a RunStore, or a RunStoreCore (wrapped by coreStore), or what connectCore gave. */
  get store() {
    return this.#store;
  }

  set store(store) {
    this.#stop();
    this.#store = store && typeof store.subscribe !== 'function' ? coreStore(store) : store;
    this.#views.sync?.reset();
    this.#tabs();
    if (this.isConnected) this.#start();
  }

  /** The runstore/workflow engine on the same store: with it, running workflows can be signalled and cancelled. */
  get engine() {
    return this.#engine;
  }

  set engine(engine) {
    this.#engine = engine ?? null;
    this.#mark(['run']);
  }

  /** The sync the app runs, `{ url, namespace }` as given to `store.sync` (the token is not needed). */
  get sync() {
    return this.#sync;
  }

  set sync(sync) {
    const before = this.#sync;
    this.#sync = sync ?? null;
    if (before?.url !== this.#sync?.url || before?.namespace !== this.#sync?.namespace) this.#views.sync?.reset();
    this.#tabs();
    this.#mark(['sync']);
  }

  /** Hand it `store.sync`'s progress reports: `onProgress: inspector.syncProgress`. */
  syncProgress = (progress) => {
    this.#views.sync.report(progress);
    this.#mark(['sync']);
  };

  /** Resolves once the workflow list first showed the store's workflows (or that there are none). */
  get ready() {
    return this.#painted;
  }

  /** The view shown: `workflows`, `effects`, `outbox`, `timers`, `checkpoints`, `conversations`, `changes`, `sync` or `store`. */
  get view() {
    return this.#active;
  }

  set view(name) {
    this.setAttribute('view', name);
  }

  /** Shows workflow `workflowId` (its timeline, steps, journal) in the workflows view. */
  select(workflowId) {
    this.#selected = workflowId;
    if (this.#active !== 'workflows' && this.#allowed('workflows')) this.#show('workflows');
    this.#list.redraw();
    this.#run.show(workflowId).catch((error) => this.#told(error));
  }

  // ----- lifecycle -----

  connectedCallback() {
    if (this.#store && !this.#unsubscribe) this.#start();
  }

  disconnectedCallback() {
    this.#stop();
  }

  attributeChangedCallback(name) {
    if (name === 'views') this.#tabs();
    if (name === 'view') this.#show(this.getAttribute('view'));
    if (name === 'readonly') this.#mark(Object.keys(this.#views));
  }

  #start() {
    if (!this.#store) return;
    this.#unsubscribe = this.#store.subscribe(null, (change) => this.#heard(change));
    // A store that syncs itself (syncServerStore) tells how that goes: failures as a toast too.
    this.#unsubscribeSync = this.#store.subscribeSync?.((progress) => {
      this.syncProgress(progress);
      if (progress.type === 'error') this.#told(progress.error);
    }) ?? null;
    this.#list.reset().catch((error) => this.#told(error));
    if (this.#selected) this.#run.show(this.#selected).catch((error) => this.#told(error));
    this.#mark(Object.keys(this.#views));
    // Times shown relative to now (a timer due in 3 s, a run going for 10 s) move on.
    this.#tick = setInterval(() => this.#ticked(), 1000);
    this.#live(true);
  }

  #stop() {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#unsubscribeSync?.();
    this.#unsubscribeSync = null;
    this.#list?.stop();
    clearInterval(this.#tick);
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#live(false);
  }

  // ----- the frame -----

  #build() {
    const root = this.#root;
    const tabs = VIEWS.map(
      ([name, label]) => html`<button type="button" role="tab" id="tab-${name}" data-tab="${name}" aria-controls="panel-${name}" aria-selected="false" tabindex="-1">${label}${name === 'changes' ? html` <b data-changes-count>0</b>` : ''}</button>`,
    );
    const panels = VIEWS.map(([name]) => html`<section role="tabpanel" class="panel" id="panel-${name}" aria-labelledby="tab-${name}" data-view="${name}" hidden></section>`);
    root.innerHTML = `<style>${STYLE}</style>
      <div class="top"><span class="name">runstore</span><div role="tablist" aria-label="Inspector views">${tabs.join('')}</div>
        <span class="live off" title="follows every commit of the store, from any tab">live</span></div>
      <p class="toast" role="status" aria-live="polite"></p>
      ${panels.join('')}`;
    const workflows = root.querySelector('#panel-workflows');
    workflows.innerHTML = '<div class="workflows"><div class="list" aria-label="Workflow list"></div><div class="run" aria-live="off"></div></div>';
    this.#list = new WorkflowList(this.#ctx, workflows.querySelector('.list'));
    this.#run = new RunView(this.#ctx, workflows.querySelector('.run'));
    for (const [name, View] of Object.entries(CLASSES)) this.#views[name] = new View(this.#ctx, root.querySelector(`#panel-${name}`));
    this.#confirm = new Confirm(root);
    root.addEventListener('click', (event) => this.#onClick(event));
    root.querySelector('[role="tablist"]').addEventListener('keydown', (event) => this.#onTabKey(event));
    this.#tabs();
    this.#show('workflows');
  }

  /** Which views the `views` attribute allows (all without it), of those the store can fill. */
  #allowed(name) {
    if (this.#store?.server && !SERVER_VIEWS.includes(name)) return false;
    const views = this.getAttribute?.('views');
    return !views || views.split(/[\s,]+/).includes(name);
  }

  #tabs() {
    const root = this.#root;
    const allowed = VIEWS.filter(([name]) => this.#allowed(name) && (name !== 'sync' || this.#ctx.sync));
    for (const [name] of VIEWS) root.querySelector(`[data-tab="${name}"]`).hidden = !allowed.some(([n]) => n === name);
    // One view alone needs no tabs.
    root.querySelector('.top [role="tablist"]').hidden = allowed.length < 2;
    if (!this.#allowed(this.#active) && allowed.length) this.#show(allowed[0][0]);
  }

  #show(name) {
    if (!VIEWS.some(([n]) => n === name) || !this.#allowed(name)) return;
    this.#active = name;
    for (const tab of this.#root.querySelectorAll('[role="tab"]')) {
      const on = tab.dataset.tab === name;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
    }
    for (const panel of this.#root.querySelectorAll('[role="tabpanel"]')) panel.hidden = panel.dataset.view !== name;
    if (name === 'workflows') this.#list.redraw();
    // Drawn at once with what it has (its controls, "reading…"), then read.
    else this.#views[name].render();
    // A view is read when it is shown (what was marked while hidden is read now).
    this.#mark(name === 'workflows' ? [] : [name]);
  }

  // ----- reading again as the store changes -----

  #heard(change) {
    this.#views.changes.add(change);
    const count = this.#root.querySelector('[data-changes-count]');
    count.textContent = this.#views.changes.count.toLocaleString('en');
    const names = [];
    if (change.areas.includes('visibility') || change.areas.includes('journal')) names.push('list');
    if (this.#run.concerns(change)) names.push('run');
    for (const [name, view] of Object.entries(this.#views)) if (view.concerns(change)) names.push(name);
    this.#mark(names);
  }

  /** Marks parts to read again; the ones in view (or always live) are read at the next batch. */
  #mark(names) {
    for (const name of names) this.#dirty.add(name);
    if (this.#timer || !this.#store || !this.isConnected) return;
    this.#timer = setTimeout(() => this.#flush(), BATCH_MS);
  }

  async #flush() {
    if (this.#busy) {
      this.#timer = setTimeout(() => this.#flush(), BATCH_MS);
      return;
    }
    this.#timer = null;
    this.#busy = true;
    try {
      for (const name of [...this.#dirty]) {
        if (!this.#inView(name)) continue;
        this.#dirty.delete(name);
        if (name === 'list') await this.#list.refresh();
        else if (name === 'run') await this.#run.refresh();
        else await this.#views[name].refresh();
      }
    } catch (error) {
      this.#told(error);
    } finally {
      this.#busy = false;
    }
  }

  #inView(name) {
    if (name === 'list' || name === 'run') return this.#active === 'workflows';
    return name === this.#active || this.#views[name]?.alwaysLive;
  }

  #ticked() {
    if (this.#busy) return;
    if (this.#active === 'workflows' && this.#run.state?.run?.status === 'running') this.#run.render();
    if (this.#views[this.#active]?.ticking) this.#views[this.#active].render();
  }

  /**
   * Draws `markup` into `el` where it differs (morph: what did not change stays as it is). A
   * control that had the focus and was replaced gets it back in the new content (found by its
   * `data-action` and `data-arg`, or its name or id), so that live changes do not take the
   * keyboard's place away.
   */
  #put(el, markup) {
    if (el.dataset.drawn === markup) return;
    const focused = this.#root.activeElement;
    const key = focused && el.contains(focused) ? focusKey(focused) : null;
    morph(el, markup);
    el.dataset.drawn = markup;
    if (key && !el.contains(this.#root.activeElement)) el.querySelector(key)?.focus();
  }

  #live(on) {
    this.#root.querySelector('.live')?.classList.toggle('off', !on);
  }

  #told(error, ok = false) {
    const toast = this.#root.querySelector('.toast');
    toast.classList.toggle('error', !ok);
    toast.textContent = ok ? error : `${error?.code ?? 'Error'}: ${error?.message ?? error}`;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => (toast.textContent = ''), ok ? 6000 : 15000);
  }

  // ----- input -----

  #onTabKey(event) {
    const tabs = [...this.#root.querySelectorAll('[role="tab"]:not([hidden])')];
    const at = tabs.findIndex((t) => t.dataset.tab === this.#active);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const tab = tabs[(to + tabs.length) % tabs.length];
    this.#show(tab.dataset.tab);
    tab.focus();
  }

  #onClick(event) {
    const tab = event.target.closest('[role="tab"]');
    if (tab) return this.#show(tab.dataset.tab);
    const button = event.target.closest('[data-action]');
    if (!button) return undefined;
    return this.#act(button.dataset.action, button.dataset).catch((error) => this.#told(error));
  }

  async #act(action, { arg, scope }) {
    const ctx = this.#ctx;
    const confirm = this.#confirm;
    let message = null;
    switch (action) {
      case 'open-workflow':
        return this.select(arg);
      case 'open-checkpoint':
        this.#show('checkpoints');
        return this.#views.checkpoints.open(arg);
      case 'all-events':
        return this.#run.showAllEvents();
      case 'download-artifact': {
        const artifact = await ctx.store.getArtifact(scope, arg);
        return actions.download(this.ownerDocument, artifact.name ?? artifact.artifactId, artifact.bytes, artifact.mediaType);
      }
      case 'download-conversation': {
        const state = this.#views.conversations.state(arg);
        return state && actions.download(this.ownerDocument, `${arg}.bin`, state.state, 'application/octet-stream');
      }
      case 'signal':
        message = await actions.signal(ctx, confirm, arg);
        break;
      case 'cancel':
        message = await actions.cancel(ctx, confirm, arg);
        break;
      case 'retry':
        message = await actions.retry(ctx, confirm, arg);
        break;
      case 'requeue': {
        const row = this.#views.outbox.row(arg);
        if (row) message = await actions.requeue(ctx, confirm, row);
        break;
      }
      case 'purge':
        message = await actions.purge(ctx, confirm);
        break;
      case 'export-store':
        message = await actions.exportStore(ctx, confirm);
        break;
      case 'export-run':
        message = await actions.exportRun(ctx, confirm, arg, this.#run.state);
        break;
      default:
    }
    if (message) this.#told(message, true);
    return undefined;
  }
}

/** A selector that finds a control again in content drawn anew. */
function focusKey(el) {
  const { action, arg, effectFilter, outboxFilter } = el.dataset;
  const quote = (v) => JSON.stringify(String(v));
  if (action) return `[data-action=${quote(action)}]${arg ? `[data-arg=${quote(arg)}]` : ''}`;
  if (effectFilter !== undefined) return `[data-effect-filter=${quote(effectFilter)}]`;
  if (outboxFilter !== undefined) return `[data-outbox-filter=${quote(outboxFilter)}]`;
  if (el.name) return `[name=${quote(el.name)}]`;
  if (el.id) return `#${CSS.escape(el.id)}`;
  return null;
}
