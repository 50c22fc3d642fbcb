// The workflows: the visibility index with its filters (status, type, start time, search
// attributes) and a workflow id prefix, counted per status, in a virtualized list that reads
// the index page by page as it scrolls. A listbox: arrows, Page Up/Down, Home and End move
// through it, Enter opens the workflow.
import { SINCE_CHOICES, visibilityFilter } from './inspector-search.js';
import { ScanSource } from './inspector-scan.js';
import { PagedSource, VirtualRows } from './inspector-virtual.js';
import { clock, duration, html, iso, pill, plural, trusted } from './inspector-html.js';

/** The statuses counted and offered as filters (the engine's `blocked`: its code no longer replays). */
const STATUSES = ['running', 'blocked', 'completed', 'failed', 'cancelled'];

/** What a running workflow of runstore/workflow waits on (its `waiting` attribute), in words. */
function waiting(record) {
  const a = record.searchAttributes ?? {};
  if (record.status !== 'running') return '';
  return [a.steps !== undefined && `${plural(a.steps, 'step')} done`, a.waiting ? `waits: ${a.waiting}` : null].filter(Boolean).join(' · ');
}

function rowDetail(r, now) {
  if (r.status === 'running' || r.status === 'pending') return waiting(r) || `running for ${duration(now - r.startTime)}`;
  if (r.status === 'failed' || r.status === 'blocked') return r.failureReason ?? r.status;
  return r.closeTime ? `took ${duration(r.closeTime - r.startTime)}` : r.status;
}

export class WorkflowList {
  #ctx;
  #el;
  #rows;
  #source = null;
  #filter = { filter: { search: [] }, prefix: null };
  #controls = { status: '', type: '', since: 'any', from: '', before: '', text: '' };
  #counts = {};
  #total = null;
  #active = 0;
  #types = new Set();
  #error = null;
  #refreshing = null;
  #again = false;
  #nextAt = 0;
  #later = null;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
    element.innerHTML = this.#frame();
    const scroller = element.querySelector('.vlist');
    this.#rows = new VirtualRows(scroller, { render: (i) => this.#row(i), onRange: (from, to) => this.#source?.want(from, to) });
    element.addEventListener('click', (event) => this.#onClick(event));
    element.addEventListener('input', (event) => this.#onInput(event));
    element.addEventListener('change', (event) => this.#onInput(event));
    scroller.addEventListener('keydown', (event) => this.#onKey(event));
    scroller.addEventListener('focus', () => this.#rows.schedule());
  }

  #frame() {
    const statuses = [['', 'all'], ...STATUSES.map((s) => [s, s])].map(
      ([value, label]) => html`<button type="button" class="chip" data-status-filter="${value}" aria-pressed="${value === '' ? 'true' : 'false'}">${label} <b data-count="${value}"></b></button>`,
    );
    const since = SINCE_CHOICES.map(([value, label]) => html`<option value="${value}">${label}</option>`);
    return String(html`
      <div class="filters">
        <div class="chips" role="group" aria-label="Status">${statuses}</div>
        <div class="fields">
          <label>Type <input name="type" list="types" autocomplete="off" spellcheck="false" size="10" /></label>
          <label>Started <select name="since">${since}</select></label>
          <span class="range" hidden>
            <label>from <input type="datetime-local" name="from" /></label>
            <label>before <input type="datetime-local" name="before" /></label>
          </span>
          <label class="grow">Search <input type="search" name="text" spellcheck="false" autocomplete="off"
            placeholder='id prefix, key=value, has:key' title='A workflow id prefix; key=value, key!=value, key>value, key<value (JSON values, "quoted text"), has:key and -has:key on search attributes' /></label>
        </div>
        <datalist id="types"></datalist>
      </div>
      <p class="line" aria-live="polite"></p>
      <div class="vlist" role="listbox" tabindex="0" aria-label="Workflows"><div class="vspace"></div><div class="vwindow"></div></div>`);
  }

  /** Starts reading (again) with the current filters, from the top. */
  reset() {
    this.#source?.stop();
    this.#filter = visibilityFilter(this.#controls);
    this.#error = null;
    this.#active = 0;
    const store = this.#ctx.store;
    const filter = this.#filter.filter;
    const loaded = () => this.#loaded();
    if (this.#filter.prefix !== null) {
      this.#source = new ScanSource(store, filter, this.#filter.prefix, loaded);
    } else {
      const fetch = (cursor, limit) =>
        store.listVisibility(filter, limit, cursor).then((page) => ({ items: page.records, nextCursor: page.nextCursor }));
      this.#source = new PagedSource(fetch, loaded);
    }
    this.#el.querySelector('.vlist').scrollTop = 0;
    this.#total = null;
    this.#rows.total = 0;
    this.#rows.schedule();
    return this.#count();
  }

  /**
   * The store changed: counts and the rows in view are read again, at most once in three times
   * the last reading took (and 250 ms): on a large store under a stream of commits the
   * inspector must not keep the store's worker from the app's own work.
   */
  refresh() {
    const wait = this.#nextAt - Date.now();
    if (wait > 0) {
      clearTimeout(this.#later);
      this.#later = setTimeout(() => this.refresh(), wait);
      return undefined;
    }
    if (this.#refreshing) {
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      const started = Date.now();
      try {
        this.#source?.refresh();
        await this.#count();
      } finally {
        this.#nextAt = Date.now() + Math.max(250, 3 * (Date.now() - started));
        this.#refreshing = null;
        if (this.#again) {
          this.#again = false;
          this.refresh();
        }
      }
    })();
    return this.#refreshing;
  }

  /** Counts the filter's workflows in all and per status (the status filter aside). */
  async #count() {
    const store = this.#ctx.store;
    const { statuses: _, ...rest } = this.#filter.filter;
    try {
      const counts = { '': await store.countVisibility(rest) };
      for (const status of STATUSES) counts[status] = await store.countVisibility({ ...rest, statuses: [status] });
      this.#counts = counts;
      this.#total = counts[this.#controls.status];
      this.#error = null;
    } catch (error) {
      this.#error = error;
    }
    this.#loaded();
  }

  #loaded() {
    const source = this.#source;
    if (!source) return;
    const known = source instanceof ScanSource ? source.total : (source.length ?? this.#total ?? 0);
    this.#rows.total = source instanceof ScanSource ? known : Math.min(known, this.#total ?? known);
    this.#active = Math.min(this.#active, Math.max(0, this.#rows.total - 1));
    this.#rows.draw();
    this.#line();
    // The first screen is drawn once the count is known and its first row (if any) is there.
    if (this.#total !== null && (this.#rows.total === 0 || source.item(0))) this.#ctx.painted();
    for (const [status, n] of Object.entries(this.#counts)) {
      const b = this.#el.querySelector(`[data-count="${status}"]`);
      const text = n.toLocaleString('en');
      if (b && b.textContent !== text) b.textContent = text;
    }
  }

  #line() {
    const source = this.#source;
    const error = this.#error ?? source?.error;
    let text;
    if (error) text = html`<span class="bad">${error.code ?? 'ERROR'}: ${error.message}</span>`;
    else if (source instanceof ScanSource) {
      text = source.done
        ? html`${plural(source.total, 'workflow')} with an id starting <code>${this.#filter.prefix}</code> (${source.read.toLocaleString('en')} read)`
        : html`reading for ids starting <code>${this.#filter.prefix}</code>: ${source.read.toLocaleString('en')} of ${(this.#total ?? 0).toLocaleString('en')} read, ${plural(source.total, 'match', 'matches')}`;
    } else if (this.#total === null) text = 'counting…';
    else text = plural(this.#total, 'workflow');
    const line = this.#el.querySelector('.line');
    const markup = String(text);
    if (line.innerHTML !== markup) line.innerHTML = markup;
  }

  #row(i) {
    const r = this.#source?.item(i);
    const selected = r && r.workflowId === this.#ctx.selected;
    const common = `role="option" id="row-${i}" aria-posinset="${i + 1}" aria-setsize="${this.#rows.total}"`;
    const active = i === this.#active ? ' active' : '';
    if (!r) return `<div class="row loading${active}" ${common} aria-busy="true" data-index="${i}">loading…</div>`;
    this.#seeType(r.workflowType);
    return String(html`<div class="row${selected ? ' selected' : ''}${active}" ${trusted(common)} aria-selected="${selected ? 'true' : 'false'}"
      data-index="${i}" data-workflow-id="${r.workflowId}" data-status="${r.status}">
      <div class="l1">${pill(r.status)} <code class="id" title="${r.workflowId}">${r.workflowId}</code><span class="when" title="${iso(r.startTime)}">${clock(r.startTime)}</span></div>
      <div class="l2">${this.#elsewhere(r) ? html`<span class="badge synced" title="started on another device, which runs it; pulled here by sync">another device's</span> ` : ''}<span class="type">${r.workflowType}</span> · ${rowDetail(r, Date.now())}</div></div>`);
  }

  /** Whether another device runs the workflow (runstore/workflow's `origin` attribute names the device). */
  #elsewhere(r) {
    const origin = r.searchAttributes?.origin;
    const device = this.#ctx.engine?.device;
    return typeof origin === 'string' && typeof device === 'string' && origin !== device;
  }

  #seeType(type) {
    if (this.#types.has(type) || this.#types.size > 200) return;
    this.#types.add(type);
    const option = this.#el.ownerDocument.createElement('option');
    option.value = type;
    this.#el.querySelector('#types').append(option);
  }

  #onClick(event) {
    const status = event.target.closest('[data-status-filter]');
    if (status) {
      this.#controls.status = status.dataset.statusFilter;
      for (const b of this.#el.querySelectorAll('[data-status-filter]')) b.setAttribute('aria-pressed', String(b === status));
      this.reset();
      return;
    }
    const row = event.target.closest('.row[data-workflow-id]');
    if (row) {
      this.#active = Number(row.dataset.index);
      this.#ctx.select(row.dataset.workflowId);
    }
  }

  #onInput(event) {
    const { name, value } = event.target;
    if (!(name in this.#controls) || this.#controls[name] === value) return;
    // Typing in the search box waits for a pause; the other controls apply at once.
    this.#controls[name] = value;
    if (name === 'since') this.#el.querySelector('.range').hidden = value !== 'range';
    clearTimeout(this.typing);
    if (name === 'text' && event.type === 'input') this.typing = setTimeout(() => this.reset(), 250);
    else this.reset();
  }

  #onKey(event) {
    const total = this.#rows.total;
    if (!total) return;
    const moves = {
      ArrowDown: 1,
      ArrowUp: -1,
      PageDown: this.#rows.pageRows,
      PageUp: -this.#rows.pageRows,
      Home: -Infinity,
      End: Infinity,
    };
    if (event.key in moves) {
      event.preventDefault();
      this.#active = Math.max(0, Math.min(total - 1, this.#active + moves[event.key]));
      this.#rows.reveal(this.#active);
      this.#rows.draw();
      this.#announce();
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      const r = this.#source?.item(this.#active);
      if (r) this.#ctx.select(r.workflowId);
    }
  }

  /** Points the listbox at its active row, which screen readers then read. */
  #announce() {
    const list = this.#el.querySelector('.vlist');
    if (this.#el.querySelector(`#row-${this.#active}`)) list.setAttribute('aria-activedescendant', `row-${this.#active}`);
    else list.removeAttribute('aria-activedescendant');
  }

  /** Draws the rows again (a selection changed, a font loaded). */
  redraw() {
    this.#rows.draw();
    this.#announce();
  }

  remeasure() {
    this.#rows.remeasure();
  }

  stop() {
    clearTimeout(this.#later);
    this.#source?.stop();
  }
}
