// Sync status, when the app says which server and namespace it syncs with (`inspector.sync =
// { url, namespace }`): what the store keeps of that target (its cursor in the server's change
// feed, whether every local append was handled by a pass, the workflows in conflict), read in
// every tab, and what the app's `store.sync` reported (`onProgress`, handed to
// `inspector.syncProgress`, or a copy of a server's namespace tells itself): the last push and
// pull, failures, offline. Nothing is fetched.
import { clock, html, iso, plural } from './inspector-html.js';

/** The target name `store.sync` keeps its state under (js/sync.js: namespace@url). */
export function syncTargetOf({ url, namespace = 'default' }) {
  return `${namespace}@${new URL(url).href.replace(/\/+$/, '')}`;
}

const freshProgress = () => ({ state: 'waiting', lastPush: null, lastPull: null, lastSync: null, pushed: 0, pulled: 0, error: null });

export class SyncView {
  #ctx;
  #el;
  #state = null;
  #error = null;
  progress = freshProgress();

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
  }

  /** Forgets what another store's or target's sync reported. */
  reset() {
    this.progress = freshProgress();
    this.#state = null;
    this.#error = null;
  }

  /** Takes one of `store.sync`'s progress reports. */
  report(p) {
    const s = this.progress;
    const now = Date.now();
    if (p.type === 'pushed') Object.assign(s, { pushed: s.pushed + p.events, lastPush: now });
    if (p.type === 'pulled') Object.assign(s, { pulled: s.pulled + p.events, lastPull: now });
    if (p.type === 'synced') Object.assign(s, { state: 'synced', lastSync: now, error: null });
    if (p.type === 'error') Object.assign(s, { state: 'error', error: { code: p.error?.code ?? 'ERROR', message: p.error?.message ?? String(p.error) } });
  }

  concerns(change) {
    return change.areas.includes('journal');
  }

  async refresh() {
    const sync = this.#ctx.sync;
    if (!sync) return this.render();
    try {
      const target = syncTargetOf(sync);
      const store = this.#ctx.store;
      const stored = await store.syncTarget(target);
      const conflicts = (await store.syncWorkflows(target, { select: 'inState', state: 'conflict' }, { limit: 100 })).items;
      const purged = (await store.syncWorkflows(target, { select: 'inState', state: 'purged' }, { limit: 1000 })).items.length;
      this.#state = { target, stored, conflicts, purged };
      this.#error = null;
    } catch (error) {
      this.#error = error;
    }
    return this.render();
  }

  render() {
    const sync = this.#ctx.sync;
    if (!sync) return this.#ctx.put(this.#el, String(html`<p class="empty">No sync given: set <code>inspector.sync = { url, namespace }</code> to see one.</p>`));
    const p = this.progress;
    const offline = (globalThis.navigator && navigator.onLine === false) || p.error?.code === 'UNAVAILABLE';
    const state = offline ? 'offline' : p.state;
    const s = this.#state;
    const when = (t) => (t ? html`<time title="${iso(t)}">${clock(t)}</time>` : 'not yet');
    const conflicts = s?.conflicts.map(
      (w) => html`<li data-conflict="${w.workflowId}"><button type="button" class="link" data-action="open-workflow" data-arg="${w.workflowId}"><code>${w.workflowId}</code></button>
        here ${w.localHead}, agreed ${w.syncedHead}</li>`,
    );
    const pending = s && (s.stored.mark === null || s.stored.mark < s.stored.clock);
    return this.#ctx.put(this.#el, String(html`
      <dl class="kv" data-sync-state="${state}">
        <dt>server</dt><dd><code>${sync.url}</code>, namespace <code>${sync.namespace ?? 'default'}</code></dd>
        <dt>status</dt><dd><span class="pill ${state}">${state}</span>${p.error ? html` <span class="bad">${p.error.code}: ${p.error.message}</span>` : ''}</dd>
        <dt>last sync</dt><dd>${when(p.lastSync)}</dd>
        <dt>last push</dt><dd>${when(p.lastPush)} · ${plural(p.pushed, 'event')} pushed</dd>
        <dt>last pull</dt><dd>${when(p.lastPull)} · ${plural(p.pulled, 'event')} pulled</dd>
        ${s ? html`<dt>feed cursor</dt><dd>${s.stored.cursor}</dd>
          <dt>local appends</dt><dd>${pending ? 'some not yet pushed by a pass' : 'all handled by a pass'} (mark ${s.stored.mark ?? 'none'}, clock ${s.stored.clock})</dd>
          <dt>purged here</dt><dd>${plural(s.purged, 'workflow')}</dd>` : ''}
      </dl>
      <p class="legend">${this.#ctx.store?.server
        ? html`Progress (last pull, errors) is this copy's own sync with the server; the rest is read from the copy.`
        : html`Progress (last push, pull, errors) comes from the tab that runs <code>store.sync</code> when its <code>onProgress</code> is handed to <code>inspector.syncProgress</code>; the rest is read from the store, in every tab.`}</p>
      ${this.#error ? html`<p class="bad">${this.#error.code}: ${this.#error.message}</p>` : ''}
      <h3>Conflicts <small>${s ? s.conflicts.length : ''}</small></h3>
      ${conflicts?.length ? html`<ul class="plain">${conflicts}</ul>` : html`<p class="empty">none</p>`}`));
  }
}
