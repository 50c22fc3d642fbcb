// Change notices as they come (`store.subscribe`): one per commit, from any tab. The store has
// no numbered change feed to read back, so the view shows what it heard since it was opened.
import { clock, html } from './inspector-html.js';

const KEEP = 500;
const SHOWN_IDS = 5;

export class ChangesView {
  #ctx;
  #el;
  #heard = [];
  #count = 0;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
  }

  /** Keeps `change`, heard at `at`. */
  add(change, at = Date.now()) {
    this.#count += 1;
    this.#heard.unshift({ change, at, n: this.#count });
    if (this.#heard.length > KEEP) this.#heard.pop();
  }

  get count() {
    return this.#count;
  }

  concerns() {
    return true;
  }

  async refresh() {
    this.render();
  }

  render() {
    const rows = this.#heard.map(({ change: c, at, n }) => {
      const ids = c.workflowIds.slice(0, SHOWN_IDS).map(
        (id) => html`<button type="button" class="link" data-action="open-workflow" data-arg="${id}"><code>${id}</code></button> `,
      );
      const more = c.workflowIds.length > SHOWN_IDS ? ` and ${c.workflowIds.length - SHOWN_IDS} more` : '';
      const heads = Object.entries(c.heads).slice(0, SHOWN_IDS).map(([id, head]) => `${id}: ${head}`).join(', ');
      const revisions = c.revisions.slice(0, SHOWN_IDS).map((r) => `${r.kind} ${r.id} → ${r.revision}`).join(', ');
      return html`<tr data-change="${n}"><td class="num">${n}</td><td>${clock(at)}</td><td>${c.areas.join(', ')}</td>
        <td class="wrap">${ids}${more}</td><td class="wrap dim">${heads}${heads && revisions ? '; ' : ''}${revisions}</td>
        <td class="key dim"><code>${c.requestId ?? ''}</code></td></tr>`;
    });
    this.#ctx.put(this.#el, String(html`
      <p class="legend">Each commit's notice, from this tab and the others, newest first: ${this.#count} heard since the inspector opened${this.#count > KEEP ? ` (the last ${KEEP} kept)` : ''}.</p>
      <div class="scroll-x"><table class="changes"><thead><tr><th class="num">#</th><th>heard</th><th>areas</th><th>workflows</th><th>heads, revisions</th><th>request id</th></tr></thead>
      <tbody>${rows.length ? rows : html`<tr><td colspan="6" class="empty">no commit yet</td></tr>`}</tbody></table></div>`));
  }
}
