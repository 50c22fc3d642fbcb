// What the engines of a store hear of its commits. A RunStore tells its subscribers of every
// commit, from any tab, each once and in order (js/changes.js); a RunStoreCore tells nobody, so
// there the engines of the process hear of each commit they make from the store's answer to
// it, which carries the commit's change as the store numbered it, and read the change feed when
// something else committed before it (one reader per store).

import { PAST_EVERY_CHANGE, resetNotice } from './changes.js';
import { toRunStoreError } from './errors.js';
import { stepAsText } from './wire.js';

const byStore = new WeakMap();

/** The change notices of `store`, shared by every engine on it. */
export function noticesOf(store) {
  let notices = byStore.get(store);
  if (!notices) {
    notices = new Notices(store);
    byStore.set(store, notices);
  }
  return notices;
}

class Notices {
  #store;
  #listeners = new Set();
  /** The store whose feed this process reads (a RunStoreCore), or null when the store tells. */
  #feed = null;
  /** The number of the newest change told from the feed. */
  #seen = 0;

  constructor(store) {
    this.#store = store;
    if (typeof store.subscribe === 'function') {
      store.subscribe(null, (change) => this.#tell(change));
    } else {
      this.#feed = store;
      this.#seen = store.changesSince(PAST_EVERY_CHANGE).newest;
    }
  }

  /** Calls `listener(change)` on each notice; returns the function that stops it. */
  listen(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Commits `step`, and on a store that does not tell, tells its change. A RunStoreCore takes
   * the step as the main-thread client's worker takes its writes (`__write`: JSON text, and an
   * answer with the step's numbered change): when that change is the next the feed holds, it
   * is told as it is; else the feed is read from the last change told.
   */
  async commit(step) {
    const message = typeof this.#feed?.__write === 'function' ? stepAsText(step) : null;
    if (message === null) {
      const outcome = await this.#store.commit(step);
      this.committed();
      return outcome;
    }
    let written;
    try {
      written = this.#feed.__write('commit', message.requestId, message.text, message.holes, message.bytes);
    } catch (error) {
      throw toRunStoreError(error);
    }
    const { outcomes, replayed, change } = written;
    if (change?.number === this.#seen + 1) {
      this.#seen = change.number;
      this.#tell(change);
    } else {
      this.committed();
    }
    return { outcomes, replayed };
  }

  /** Something this process committed: on a store that does not tell, its change (and any before it) is read from the feed. */
  committed() {
    if (!this.#feed) return;
    for (;;) {
      const { changes, reset, newest } = this.#feed.changesSince(this.#seen);
      if (reset) {
        this.#seen = newest;
        this.#tell(resetNotice(newest));
        return;
      }
      for (const change of changes) {
        this.#seen = change.number;
        this.#tell(change);
      }
      if (changes.length === 0 || this.#seen >= newest) return;
    }
  }

  #tell(change) {
    for (const listener of [...this.#listeners]) listener(change);
  }
}
