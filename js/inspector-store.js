// The store as a whole: where it lives, whether this tab runs it, its size, and the actions on
// all of it (export, purge).
import { bytes, html, plural } from './inspector-html.js';

/** Where the store runs, said for its kind. */
function runsWhere(store) {
  if (store.server) return html`a read-only copy of namespace <code>${store.server.namespace}</code> at <code>${store.server.url}</code>, pulled into this page`;
  if (typeof store.isLeader !== 'boolean') return 'in this thread';
  return store.isLeader ? 'this tab runs the store (the leader)' : "another tab runs the store; this tab's calls go to it";
}

export class StoreView {
  #ctx;
  #el;
  #info = null;
  #error = null;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
  }

  concerns(change) {
    return change.areas.includes('visibility') || change.areas.includes('journal');
  }

  async refresh() {
    const store = this.#ctx.store;
    try {
      const stats = await store.storageStats();
      const workflows = await store.countVisibility({});
      const closed = await store.countVisibility({ statuses: ['completed', 'failed', 'cancelled'] });
      this.#info = { stats, workflows, closed };
      this.#error = null;
    } catch (error) {
      this.#error = error;
    }
    this.render();
  }

  render() {
    const store = this.#ctx.store;
    const i = this.#info;
    const role = runsWhere(store);
    const used = i && i.stats.pageSize * (i.stats.pageCount - i.stats.freelistCount);
    const write = !this.#ctx.readOnly;
    this.#ctx.put(this.#el, String(html`
      <dl class="kv">
        <dt>medium</dt><dd>${store.persistence ?? 'unknown'}</dd>
        <dt>runs</dt><dd>${role}</dd>
        ${i ? html`<dt>size</dt><dd>${bytes(used)} used, ${bytes(i.stats.pageSize * i.stats.freelistCount)} free pages</dd>
          <dt>workflows</dt><dd>${plural(i.workflows, 'workflow')} in the visibility index, ${i.closed.toLocaleString('en')} closed</dd>` : ''}
      </dl>
      ${this.#error ? html`<p class="bad">${this.#error.code}: ${this.#error.message}</p>` : ''}
      <div class="actions">
        <button type="button" data-action="export-store">Export the store…</button>
        ${write ? html`<button type="button" data-action="purge">Purge closed workflows…</button>` : ''}
      </div>`));
  }
}
