// Checkpoints. The store keeps each checkpoint's latest revision only, and lists them per run,
// not all together; so the view lists the checkpoints it has heard of (change notices, the
// runs shown, a look-up by checkpoint id or run id) and keeps every revision it read while
// open, to show what changed from one revision to the next.
import { jsonDiff } from './inspector-diff.js';
import { brief, clock, html, iso, json } from './inspector-html.js';

/** Revisions kept per checkpoint, and checkpoints kept. */
const KEEP_REVISIONS = 20;
const KEEP_IDS = 500;

export class CheckpointsView {
  #ctx;
  #el;
  /** checkpoint id → its revisions read, oldest first. */
  #seen = new Map();
  #selected = null;
  #revision = null;
  #error = null;
  /** Checkpoints to read at the next refresh (null: every one heard of). */
  #pending = null;
  /** Read as changes come even while not shown: a revision not read then cannot be diffed later. */
  alwaysLive = true;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    element.addEventListener('submit', (event) => {
      event.preventDefault();
      this.lookUp(new FormData(event.target).get('id').trim());
    });
    element.addEventListener('change', (event) => {
      if (event.target.name !== 'revision') return;
      this.#revision = Number(event.target.value);
      this.render();
    });
  }

  /** The checkpoints of `change`'s revisions are read (kept for their diffs, even unseen). */
  concerns(change) {
    const ids = change.revisions.filter((r) => r.kind === 'checkpoint').map((r) => r.id);
    for (const id of ids) {
      if (!this.#seen.has(id)) this.#remember(id);
      this.#pending?.add(id);
    }
    // Without revisions (a change told by runstore/core's engine), the known ones are read again.
    if (!ids.length && change.areas.includes('checkpoints')) this.#pending = null;
    return ids.length > 0 || (change.areas.includes('checkpoints') && this.#seen.size > 0);
  }

  #remember(id) {
    if (this.#seen.size >= KEEP_IDS) this.#seen.delete(this.#seen.keys().next().value);
    this.#seen.set(id, []);
  }

  /** Shows checkpoint `id` (or the checkpoints of run `id`). */
  async lookUp(id) {
    if (!id) return;
    this.#error = null;
    try {
      const checkpoint = await this.#ctx.store.loadCheckpoint(id).catch((error) => {
        if (error?.code === 'NOT_FOUND') return null;
        throw error;
      });
      if (checkpoint) {
        if (!this.#seen.has(id)) this.#remember(id);
        this.#pending?.add(id);
        this.#selected = id;
      } else {
        const { items } = await this.#ctx.store.listRunCheckpoints(id, { limit: 1000 });
        if (!items.length) this.#error = `no checkpoint and no run's checkpoints under ${id}`;
        for (const c of items) {
          if (!this.#seen.has(c.checkpointId)) this.#remember(c.checkpointId);
          this.#pending?.add(c.checkpointId);
        }
        this.#selected = items[0]?.checkpointId ?? this.#selected;
      }
      this.#revision = null;
    } catch (error) {
      this.#error = `${error.code ?? 'ERROR'}: ${error.message}`;
    }
    await this.refresh();
  }

  async refresh() {
    const ids = this.#pending ?? new Set(this.#seen.keys());
    this.#pending = new Set();
    for (const id of ids) {
      const revisions = this.#seen.get(id);
      if (!revisions) continue;
      let checkpoint;
      try {
        checkpoint = await this.#ctx.store.loadCheckpoint(id);
      } catch (error) {
        if (error?.code !== 'NOT_FOUND') throw error;
        continue;
      }
      if (revisions.at(-1)?.revision === checkpoint.revision) continue;
      revisions.push(checkpoint);
      if (revisions.length > KEEP_REVISIONS) revisions.shift();
    }
    this.render();
  }

  render() {
    const ids = [...this.#seen.keys()];
    const list = ids.map((id) => {
      const last = this.#seen.get(id).at(-1);
      return html`<li><button type="button" class="link ${id === this.#selected ? 'on' : ''}" data-action="open-checkpoint" data-arg="${id}"
        aria-current="${id === this.#selected ? 'true' : 'false'}"><code>${id}</code></button> ${last ? `revision ${last.revision}` : ''}</li>`;
    });
    this.#ctx.put(this.#el, String(html`
      <form class="lookup"><label>Checkpoint id or run id <input name="id" required spellcheck="false" autocomplete="off" /></label> <button>Show</button></form>
      ${this.#error ? html`<p class="bad">${this.#error}</p>` : ''}
      <div class="pair wide-right">
        <div><h3>Heard of <small>${ids.length}</small></h3>${ids.length ? html`<ul class="plain">${list}</ul>` : html`<p class="empty">none yet: they appear as they are written, or look one up</p>`}</div>
        <div>${this.#detail()}</div>
      </div>`));
  }

  /** Opens checkpoint `id` from a link elsewhere. */
  open(id) {
    this.#selected = id;
    this.#revision = null;
    return this.lookUp(id);
  }

  #detail() {
    const revisions = this.#seen.get(this.#selected) ?? [];
    if (!revisions.length) return html`<p class="empty">Select a checkpoint.</p>`;
    const index = Math.max(0, this.#revision === null ? revisions.length - 1 : revisions.findIndex((c) => c.revision === this.#revision));
    const c = revisions[index];
    const previous = revisions[index - 1];
    const options = revisions.map((r) => html`<option value="${r.revision}" ${r === c ? 'selected' : ''}>revision ${r.revision} · ${clock(r.updatedAt)}</option>`);
    const diff = previous ? jsonDiff(previous.state, c.state) : null;
    const changes = diff?.map(
      (d) => html`<li class="${d.kind}" data-diff="${d.kind}"><code>${d.path}</code> ${d.kind === 'added' ? html`added <code>${brief(d.after)}</code>` : d.kind === 'removed' ? html`removed (was <code>${brief(d.before)}</code>)` : html`<code>${brief(d.before)}</code> → <code>${brief(d.after)}</code>`}</li>`,
    );
    return html`<h3><code>${c.checkpointId}</code></h3>
      <p class="meta"><label>Revision <select name="revision">${options}</select></label> · updated <time title="${iso(c.updatedAt)}">${clock(c.updatedAt)}</time>${c.runId ? html` · run <code>${c.runId}</code>` : ''}</p>
      <h3>Changes from ${previous ? `revision ${previous.revision}` : 'the revision before'}</h3>
      ${diff === null ? html`<p class="empty">the revision before was not read while the inspector was open (the store keeps the latest only)</p>`
        : diff.length ? html`<ul class="diff">${changes}</ul>` : html`<p class="empty">no change in the state</p>`}
      <h3>State</h3><pre class="json">${json(c.state, 20_000)}</pre>`;
  }
}
