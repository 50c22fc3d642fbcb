// The transactional outbox by status. A dead letter (status `failed`) shows why it died: the
// reason its dispatcher gave, or the attempts it ran out of. runstore/workflow's own inbox
// (signals, cancellations, child results) lives here too, in namespace `runstore.workflow`.
import { StatusPaged } from './inspector-paged.js';
import { clock, hex, html, iso, pill, textOf } from './inspector-html.js';

const STATUSES = [
  ['', 'all'],
  ['pending', 'pending'],
  ['claimed', 'claimed'],
  ['failed', 'dead letters'],
  ['done', 'done'],
  ['cancelled', 'cancelled'],
];

/** A row's input, as text where it is text. */
function input(row) {
  const text = textOf(row.input);
  if (text === null) return `${row.input.length} bytes: ${hex(row.input, 24)}`;
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

export class OutboxView {
  #ctx;
  #el;
  #listing;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    this.#listing = new StatusPaged(element, 'outbox-filter', (status, page) => ctx.store.listOutbox(status, page), {
      shown: () => this.refresh(),
      drawn: () => this.render(),
    });
  }

  /** The dead letter `dispatchKey` among the rows read, for the requeue action. */
  row(dispatchKey) {
    return this.#listing.pages.items.find((r) => r.dispatchKey === dispatchKey) ?? null;
  }

  concerns(change) {
    return change.areas.includes('outbox');
  }

  async refresh() {
    await this.#listing.pages.reload();
    this.render();
  }

  render() {
    const p = this.#listing.pages;
    const chips = STATUSES.map(
      ([value, label]) => html`<button type="button" class="chip" data-outbox-filter="${value}" aria-pressed="${String((this.#listing.status ?? '') === value)}">${label}</button>`,
    );
    const rows = p.items.map((r) => this.#row(r));
    this.#ctx.put(this.#el, String(html`
      <div class="chips" role="group" aria-label="Outbox status">${chips}</div>
      ${p.error ? html`<p class="bad">${p.error.code}: ${p.error.message}</p>` : ''}
      <div class="scroll-x"><table class="outbox">
        <thead><tr><th>status</th><th>dispatch key</th><th>workflow</th><th>activity</th><th class="num">attempt</th><th>visible after</th><th>route</th><th>input, or why it died</th><th></th></tr></thead>
        <tbody>${rows.length ? rows : html`<tr><td colspan="9" class="empty">${p.loaded ? 'no row' : 'reading…'}</td></tr>`}</tbody>
      </table></div>
      ${p.next ? html`<button type="button" data-more>Load more</button>` : ''}`));
  }

  #row(r) {
    const dead = r.status === 'failed';
    const route = [r.namespace, r.taskQueue, r.node].filter((x) => x !== null).join(' / ');
    const requeue = dead && !this.#ctx.readOnly
      ? html`<button type="button" class="small" data-action="requeue" data-arg="${r.dispatchKey}">Requeue…</button>` : '';
    return html`<tr data-outbox-status="${r.status}" data-dispatch-key="${r.dispatchKey}" class="${dead ? 'dead' : ''}">
      <td>${pill(r.status, dead ? 'dead letter' : r.status)}</td><td class="key"><code>${r.dispatchKey}</code></td>
      <td class="key"><button type="button" class="link" data-action="open-workflow" data-arg="${r.workflowId}"><code>${r.workflowId}</code></button></td>
      <td><code>${r.activityType}</code></td><td class="num">${r.attempt} / ${r.maxAttempts}</td>
      <td title="${iso(r.visibleAfter)}">${clock(r.visibleAfter)}</td><td>${route}</td>
      <td class="wrap">${dead ? html`<span class="bad" data-dead-reason>${r.deadReason ?? 'no reason recorded'}</span><br />` : ''}<code class="dim">${input(r)}</code></td>
      <td>${requeue}</td></tr>`;
  }
}
