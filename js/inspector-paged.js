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
