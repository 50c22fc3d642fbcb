// A long listing shown as a window onto it: only the rows in view (and a few around) are in the
// DOM, positioned in a spacer as tall as every row together, so 100,000 workflows scroll as
// 100 would. The rows come from a `PagedSource`: the store's listings are paged by cursor (a
// position, valid across writes), with no offsets, so a page far down is reached by walking
// from the nearest page whose cursor is known, in strides of the largest page the store gives.
import { morph } from './inspector-morph.js';

/** The largest page a listing gives (the store's limit). */
const MAX_LIMIT = 10_000;
/** Pages kept in memory; the ones farthest from the view go first. */
const KEEP_PAGES = 40;

/**
 * Items of a listing by index, loaded on demand. `fetch(cursor, limit)` resolves to a page
 * `{ items, nextCursor }`; `onLoad()` is called after each page that arrived.
 */
export class PagedSource {
  #fetch;
  #onLoad;
  #pages = new Map();
  /** The cursor of each page's first item that is known (page 0: null, the listing's start). */
  #cursors = new Map([[0, null]]);
  /** The index of the last page, once a page said there is no next one. */
  #lastPage = Infinity;
  /** Bumped by `refresh`: pages of an older generation are shown until reloaded. */
  #generation = 0;
  #wanted = { from: 0, to: 0 };
  #pumping = false;
  #stopped = false;

  constructor(fetch, onLoad, pageSize = 500) {
    this.#fetch = fetch;
    this.#onLoad = onLoad;
    this.pageSize = pageSize;
  }

  /** The item at `index`, or undefined while its page is not loaded. */
  item(index) {
    return this.#pages.get(Math.floor(index / this.pageSize))?.items[index % this.pageSize];
  }

  /** How many items the listing has, once its last page was read (else null). */
  get length() {
    const last = this.#pages.get(this.#lastPage);
    return last ? this.#lastPage * this.pageSize + last.items.length : null;
  }

  /** Asks for the items [from, to): the pages not loaded (or loaded before the last refresh) are fetched. */
  want(from, to) {
    this.#wanted = { from, to };
    if (!this.#pumping) this.#pump();
  }

  /**
   * The listing changed: the pages in view are fetched again, from their own cursors (each a
   * position in the order, so the rows around it are found however many came before).
   */
  refresh() {
    this.#generation += 1;
    this.#lastPage = Infinity;
    this.want(this.#wanted.from, this.#wanted.to);
  }

  stop() {
    this.#stopped = true;
  }

  /** Loads one page at a time, always the first one the latest wanted window lacks. */
  async #pump() {
    this.#pumping = true;
    try {
      for (;;) {
        if (this.#stopped) return;
        const page = this.#missing();
        if (page === null) return;
        await this.#load(page);
        this.#evict();
        if (!this.#stopped) this.#onLoad();
      }
    } finally {
      this.#pumping = false;
    }
  }

  #missing() {
    const { from, to } = this.#wanted;
    const last = Math.min(Math.floor(Math.max(to - 1, 0) / this.pageSize), this.#lastPage);
    for (let k = Math.floor(from / this.pageSize); k <= last; k++) {
      if (this.#pages.get(k)?.generation !== this.#generation) return k;
    }
    return null;
  }

  /** Fetches page `k`, or the stride toward it from the nearest known cursor before it. */
  async #load(k) {
    let start = k;
    while (!this.#cursors.has(start)) start -= 1;
    const pages = Math.min(k - start + 1, MAX_LIMIT / this.pageSize);
    const generation = this.#generation;
    const { items, nextCursor } = await this.#fetch(this.#cursors.get(start), pages * this.pageSize);
    for (let i = 0; i * this.pageSize < items.length || i === 0; i++) {
      this.#pages.set(start + i, { items: items.slice(i * this.pageSize, (i + 1) * this.pageSize), generation });
    }
    const end = start + pages;
    if (nextCursor === null) {
      this.#lastPage = start + Math.max(0, Math.ceil(items.length / this.pageSize) - 1);
      for (const key of this.#pages.keys()) if (key > this.#lastPage) this.#pages.delete(key);
      for (const key of this.#cursors.keys()) if (key > this.#lastPage) this.#cursors.delete(key);
    } else {
      this.#cursors.set(end, nextCursor);
    }
  }

  #evict() {
    if (this.#pages.size <= KEEP_PAGES) return;
    const centre = Math.floor(this.#wanted.from / this.pageSize);
    const far = [...this.#pages.keys()].sort((a, b) => Math.abs(b - centre) - Math.abs(a - centre));
    for (const key of far.slice(0, this.#pages.size - KEEP_PAGES)) this.#pages.delete(key);
  }
}

/**
 * The rows of `scroller` (an element that scrolls, holding a spacer and a window element):
 * `render(index)` gives a row's markup, `onRange(from, to)` is told which rows are in view.
 * Every row is `rowHeight` CSS pixels tall (measured from the first row drawn).
 */
export class VirtualRows {
  #scroller;
  #spacer;
  #window;
  #render;
  #onRange;
  #frame = 0;
  #drawn = '';
  total = 0;
  rowHeight = 0;

  constructor(scroller, { render, onRange }) {
    this.#scroller = scroller;
    this.#spacer = scroller.querySelector('.vspace');
    this.#window = scroller.querySelector('.vwindow');
    this.#render = render;
    this.#onRange = onRange;
    scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
  }

  /** Draws again in the next frame (once, however often it is asked). */
  schedule() {
    if (this.#frame) return;
    const raf = globalThis.requestAnimationFrame ?? ((f) => setTimeout(f, 16));
    this.#frame = raf(() => {
      this.#frame = 0;
      this.draw();
    });
  }

  /** The rows in view now: `[first, last)`. */
  range() {
    const height = this.rowHeight || 40;
    const first = Math.floor(this.#scroller.scrollTop / height);
    const count = Math.ceil((this.#scroller.clientHeight || 400) / height) + 1;
    return [first, Math.min(this.total, first + count)];
  }

  draw() {
    this.#measure();
    const height = this.rowHeight || 40;
    this.#spacer.style.height = `${this.total * height}px`;
    const [first, last] = this.range();
    // A few rows beyond the view either way, so that a small scroll shows rows already there.
    const from = Math.max(0, first - 5);
    const to = Math.min(this.total, last + 5);
    this.#onRange(from, to);
    const rows = [];
    for (let i = from; i < to; i++) rows.push(this.#render(i));
    const markup = rows.join('');
    const offset = `translateY(${from * height}px)`;
    if (this.#window.style.transform !== offset) this.#window.style.transform = offset;
    if (markup !== this.#drawn) {
      this.#drawn = markup;
      morph(this.#window, markup);
    }
    // The first rows drawn give the row height: laid out again with it at once, so that the
    // scrollbar is right before anyone drags it.
    this.#measure();
    if (height !== (this.rowHeight || 40)) this.draw();
  }

  #measure() {
    if (this.rowHeight) return;
    const row = this.#window.firstElementChild;
    const height = row?.getBoundingClientRect().height;
    if (height) this.rowHeight = height;
  }

  /** Forgets the row height (the font or zoom changed): measured again at the next draw. */
  remeasure() {
    this.rowHeight = 0;
    this.schedule();
  }

  /** Scrolls as little as needed to show row `index`. */
  reveal(index) {
    const height = this.rowHeight || 40;
    const top = index * height;
    const s = this.#scroller;
    if (top < s.scrollTop) s.scrollTop = top;
    else if (top + height > s.scrollTop + s.clientHeight) s.scrollTop = top + height - s.clientHeight;
    this.schedule();
  }

  /** How many rows one screen holds. */
  get pageRows() {
    return Math.max(1, Math.floor(this.#scroller.clientHeight / (this.rowHeight || 40)) - 1);
  }
}
