// A listing read a page at a time as the reader asks for more ("Load more"), and read again
// from its start when the store changes (as many items as were shown, up to the store's
// largest page), for the views whose lists are read whole rather than scrolled through.

const FIRST = 200;
const MAX_LIMIT = 10_000;

export class Paged {
  #fetch;
  items = [];
  next = null;
  error = null;
  loaded = false;

  /** `fetch(page)` resolves to a page `{ items, nextCursor }` of the listing. */
  constructor(fetch) {
    this.#fetch = fetch;
  }

  /** Reads the listing again from its start. */
  async reload() {
    try {
      const limit = Math.min(Math.max(this.items.length, FIRST), MAX_LIMIT);
      const page = await this.#fetch({ limit });
      this.items = page.items;
      this.next = page.nextCursor;
      this.error = null;
    } catch (error) {
      this.error = error;
    }
    this.loaded = true;
  }

  /** Reads the next page. */
  async more() {
    if (!this.next) return;
    try {
      const page = await this.#fetch({ limit: FIRST, cursor: this.next });
      this.items.push(...page.items);
      this.next = page.nextCursor;
    } catch (error) {
      this.error = error;
    }
  }
}

/**
 * A listing filtered by status, for a view in `element`: a click on a chip carrying
 * `data-<attribute>` reads it afresh under that chip's status (empty: all), a click on
 * `[data-more]` reads its next page. `list(status, page)` reads a page of the listing; `shown()`
 * is called when a filter's first page should be read (`refresh`), `drawn()` after a page more.
 */
export class StatusPaged {
  status = null;
  pages;
  #list;

  constructor(element, attribute, list, { shown, drawn }) {
    this.#list = list;
    this.pages = this.#reader();
    const key = attribute.replace(/-(\w)/g, (_, c) => c.toUpperCase());
    element.addEventListener('click', (event) => {
      const chip = event.target.closest(`[data-${attribute}]`);
      if (chip) {
        this.status = chip.dataset[key] || null;
        this.pages = this.#reader();
        shown();
      }
      if (event.target.closest('[data-more]')) this.pages.more().then(drawn);
    });
  }

  /** Pages under the status as it is now (a reading in flight keeps the status it began with). */
  #reader() {
    const status = this.status;
    return new Paged((page) => this.#list(status, page));
  }
}
