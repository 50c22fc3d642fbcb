// The effect ledger: every side effect a step (or a tool call) recorded with its idempotency
// key, by status. An effect whose outcome is unknown (its `once` step was cut off while it ran:
// it may or may not have happened, and is never run again) is marked and explained.
import { StatusPaged } from './inspector-paged.js';
import { brief, clock, html, iso, pill } from './inspector-html.js';

/** What each ledger status means, in a sentence. */
export const EFFECT_WHY = {
  prepared: 'recorded before it began',
  started: 'its body is running, or ran and was cut off before its result was recorded',
  completed: 'its result is recorded: it is never run again',
  failed: 'its last attempt failed',
  outcomeUnknown: 'cut off while it ran: it may or may not have happened, and it is not run again',
};
const LABELS = { outcomeUnknown: 'outcome unknown' };
const STATUSES = ['started', 'outcomeUnknown', 'failed', 'completed', 'prepared'];

/**
 * The workflow an effect belongs to: its request's `workflowId`, or, for runstore/workflow's
 * records, the part of the key `<workflowId>/<runId>/<step>` before the run id (a UUID).
 */
function workflowOf(e) {
  if (typeof e.request?.workflowId === 'string') return e.request.workflowId;
  return /^(.+)\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/[^/]+$/.exec(e.idempotencyKey ?? '')?.[1] ?? null;
}

/** An effect record's status as a pill. */
export const effectPill = (e) => pill(e.status.type, LABELS[e.status.type] ?? e.status.type, EFFECT_WHY[e.status.type]);

export class LedgerView {
  #ctx;
  #el;
  #listing;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    this.#listing = new StatusPaged(element, 'effect-filter', (status, page) => ctx.store.listEffects(status, page), {
      shown: () => this.refresh(),
      drawn: () => this.render(),
    });
  }

  concerns(change) {
    return change.areas.includes('effects');
  }

  async refresh() {
    await this.#listing.pages.reload();
    this.render();
  }

  render() {
    const p = this.#listing.pages;
    const chips = [['', 'all'], ...STATUSES.map((s) => [s, LABELS[s] ?? s])].map(
      ([value, label]) => html`<button type="button" class="chip ${value}" data-effect-filter="${value}" aria-pressed="${String((this.#listing.status ?? '') === value)}" title="${EFFECT_WHY[value] ?? ''}">${label}</button>`,
    );
    const unknown = p.items.filter((e) => e.status.type === 'outcomeUnknown').length;
    const rows = p.items.map((e) => this.#row(e));
    this.#ctx.put(this.#el, String(html`
      <div class="chips" role="group" aria-label="Ledger status">${chips}</div>
      <p class="legend"><b>outcome unknown</b>: ${EFFECT_WHY.outcomeUnknown}.${unknown ? html` <span class="bad" data-unknown-count="${unknown}">${unknown} shown here.</span>` : ''}</p>
      ${p.error ? html`<p class="bad">${p.error.code}: ${p.error.message}</p>` : ''}
      <div class="scroll-x"><table class="effects">
        <thead><tr><th>status</th><th>capability</th><th>key</th><th class="num" title="the attempt the engine began last">attempt</th><th class="num">revision</th><th>updated</th><th>outcome</th></tr></thead>
        <tbody>${rows.length ? rows : html`<tr><td colspan="7" class="empty">${p.loaded ? 'no effect' : 'reading…'}</td></tr>`}</tbody>
      </table></div>
      ${p.next ? html`<button type="button" data-more>Load more</button>` : ''}`));
  }

  #row(e) {
    const s = e.status;
    const workflowId = workflowOf(e);
    const key = e.idempotencyKey ?? e.effectId;
    const outcome = s.type === 'completed' ? brief(s.output, 80) : s.type === 'failed' ? s.error : '';
    return html`<tr data-effect-status="${s.type}" data-effect-key="${key}" class="${s.type === 'outcomeUnknown' ? 'unknown' : ''}">
      <td>${effectPill(e)}</td><td><code>${e.capabilityId}</code></td>
      <td class="key">${workflowId ? html`<button type="button" class="link" data-action="open-workflow" data-arg="${workflowId}" title="open workflow ${workflowId}"><code>${key}</code></button>` : html`<code>${key}</code>`}</td>
      <td class="num">${e.request?.attempt ?? ''}</td><td class="num">${e.revision}</td>
      <td title="${iso(e.updatedAt)}">${clock(e.updatedAt)}</td><td class="wrap">${outcome}</td></tr>`;
  }
}
