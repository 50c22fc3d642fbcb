// Workflows whose id starts with a prefix: the visibility index filters by type, status, time
// and search attributes but not by id, so the listing (with the other filters) is read in the
// largest pages the store gives and the matches are kept as they come. The exact id is looked
// up first, so that a whole id shows at once. Same reading interface as PagedSource.

const PAGE = 10_000;

export class ScanSource {
  #store;
  #filter;
  #prefix;
  #onLoad;
  #items = [];
  #run = 0;
  /** Records read so far, and whether the whole listing has been read. */
  read = 0;
  done = false;

  constructor(store, filter, prefix, onLoad) {
    this.#store = store;
    this.#filter = filter;
    this.#prefix = prefix;
    this.#onLoad = onLoad;
    this.refresh();
  }

  get total() {
    return this.#items.length;
  }

  item(index) {
    return this.#items[index];
  }

  want() {}

  stop() {
    this.#run += 1;
  }

  /** Reads the listing again (a change came): the matches found so far stay until it is read. */
  async refresh() {
    const run = ++this.#run;
    const current = () => run === this.#run;
    try {
      // The exact id, unless other filters are set that it would have to match too.
      const f = this.#filter;
      const plain = !f.workflowType && !f.statuses && !f.startTime && !f.search?.length;
      const exact = plain ? await this.#store.getVisibility(this.#prefix).catch(() => null) : null;
      if (!current()) return;
      if (exact && !this.#items.some((r) => r.workflowId === exact.workflowId)) this.#items = [exact, ...this.#items];
      this.read = 0;
      this.done = false;
      this.#onLoad();
      const found = [];
      let cursor = null;
      do {
        const page = await this.#store.listVisibility(this.#filter, PAGE, cursor);
        if (!current()) return;
        for (const record of page.records) if (record.workflowId.startsWith(this.#prefix)) found.push(record);
        this.read += page.records.length;
        cursor = page.nextCursor;
        // The rows found so far in this reading, then those of the last reading not reached yet.
        const seen = new Set(found.map((r) => r.workflowId));
        this.#items = cursor ? [...found, ...this.#items.filter((r) => !seen.has(r.workflowId))] : found;
        this.#onLoad();
      } while (cursor);
      this.done = true;
      this.#onLoad();
    } catch (error) {
      if (current()) {
        this.done = true;
        this.error = error;
        this.#onLoad();
      }
    }
  }
}
