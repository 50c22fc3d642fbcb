// Durable timers, soonest first: runstore/workflow's sleeps (`sleep/<name>`), retry waits
// (`retry/<step>`) and signal timeouts, and any other writer's.
import { Paged } from './inspector-paged.js';
import { clock, duration, html, iso } from './inspector-html.js';

export class TimersView {
  #ctx;
  #el;
  #paged;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    this.#paged = new Paged((page) => ctx.store.listTimers(page));
    element.addEventListener('click', (event) => {
      if (event.target.closest('[data-more]')) this.#paged.more().then(() => this.render());
    });
  }

  concerns(change) {
    return change.areas.includes('timers');
  }

  async refresh() {
    await this.#paged.reload();
    this.render();
  }

  /** Drawn again every second: the times left change. */
  get ticking() {
    return true;
  }

  render() {
    const p = this.#paged;
    const now = Date.now();
    const rows = p.items.map(
      (t) => html`<tr data-timer="${t.workflowId}/${t.timerId}">
        <td class="key"><code>${t.timerId}</code></td>
        <td class="key"><button type="button" class="link" data-action="open-workflow" data-arg="${t.workflowId}"><code>${t.workflowId}</code></button></td>
        <td title="${iso(t.fireAt)}">${clock(t.fireAt, now)}</td>
        <td class="num">${t.fireAt <= now ? html`<span class="pill due" title="due: the engine that runs the workflow fires it">due</span>` : `in ${duration(t.fireAt - now)}`}</td></tr>`,
    );
    this.#ctx.put(this.#el, String(html`
      ${p.error ? html`<p class="bad">${p.error.code}: ${p.error.message}</p>` : ''}
      <div class="scroll-x"><table class="timers">
        <thead><tr><th>timer</th><th>workflow</th><th>fires at</th><th class="num">when</th></tr></thead>
        <tbody>${rows.length ? rows : html`<tr><td colspan="4" class="empty">${p.loaded ? 'no timer pending' : 'reading…'}</td></tr>`}</tbody>
      </table></div>
      ${p.next ? html`<button type="button" data-more>Load more</button>` : ''}`));
  }
}
