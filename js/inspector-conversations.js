// Conversation states (an agent's transcript, in the app's own format): the store loads them by
// id and lists none, so the view shows the ones change notices named and the ones looked up.
import { bytes, clock, hex, html, iso, textOf } from './inspector-html.js';

const KEEP_IDS = 500;
const PREVIEW_BYTES = 8 * 1024;

export class ConversationsView {
  #ctx;
  #el;
  /** conversation id → its latest state read (null: not found). */
  #seen = new Map();
  #error = null;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    element.addEventListener('submit', (event) => {
      event.preventDefault();
      this.lookUp(new FormData(event.target).get('id').trim());
    });
  }

  concerns(change) {
    const ids = change.revisions.filter((r) => r.kind === 'conversation').map((r) => r.id);
    for (const id of ids) if (!this.#seen.has(id)) this.#remember(id);
    return ids.length > 0 || change.areas.includes('conversations');
  }

  #remember(id) {
    if (this.#seen.size >= KEEP_IDS) this.#seen.delete(this.#seen.keys().next().value);
    this.#seen.set(id, null);
  }

  async lookUp(id) {
    if (!id) return;
    if (!this.#seen.has(id)) this.#remember(id);
    await this.refresh();
  }

  /** The state of conversation `id` as last read, for a download. */
  state(id) {
    return this.#seen.get(id) ?? null;
  }

  async refresh() {
    this.#error = null;
    try {
      for (const id of this.#seen.keys()) this.#seen.set(id, await this.#ctx.store.loadConversation(id));
    } catch (error) {
      this.#error = error;
    }
    this.render();
  }

  render() {
    const rows = [...this.#seen].map(([id, c]) => {
      if (!c) return html`<tr data-conversation="${id}"><td class="key"><code>${id}</code></td><td colspan="4" class="empty">not in the store</td></tr>`;
      const text = c.state.length <= PREVIEW_BYTES ? textOf(c.state) : null;
      return html`<tr data-conversation="${id}"><td class="key"><code>${id}</code></td><td class="num">${c.revision}</td><td class="num">${c.formatVersion}</td>
        <td title="${iso(c.updatedAt)}">${clock(c.updatedAt)}</td>
        <td class="wrap">${bytes(c.state.length)} <button type="button" class="small" data-action="download-conversation" data-arg="${id}">Download</button>
          <pre>${text ?? hex(c.state)}</pre></td></tr>`;
    });
    this.#ctx.put(this.#el, String(html`
      <form class="lookup"><label>Conversation id <input name="id" required spellcheck="false" autocomplete="off" /></label> <button>Show</button></form>
      ${this.#error ? html`<p class="bad">${this.#error.code}: ${this.#error.message}</p>` : ''}
      <div class="scroll-x"><table class="conversations"><thead><tr><th>conversation</th><th class="num">revision</th><th class="num">format</th><th>updated</th><th>state</th></tr></thead>
      <tbody>${rows.length ? rows : html`<tr><td colspan="5" class="empty">none heard of yet: they appear as they are saved, or look one up</td></tr>`}</tbody></table></div>`));
  }
}
