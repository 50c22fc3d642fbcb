// What the engines of a store hear of its commits. A RunStore tells its subscribers of every
// commit, from any tab, each once and in order (js/changes.js); a RunStoreCore tells nobody, so
// there the engines of the process read its change feed after each commit they make: they hear
// of that commit exactly as the store numbered it, and of whatever else committed before it
// (one reader per store).

import { PAST_EVERY_CHANGE, resetNotice } from './changes.js';

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
  #listeners = new Set();
  /** The store whose feed this process reads (a RunStoreCore), or null when the store tells. */
  #feed = null;
  /** The number of the newest change told from the feed. */
  #seen = 0;

  constructor(store) {
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

  /** A step this process committed: on a store that does not tell, its change (and any before it) is read from the feed. */
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
