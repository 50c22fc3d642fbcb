// Change notices and their subscribers: what `store.subscribe(filter, callback)` delivers.
//
// The store numbers every commit's change in its change feed (`changesSince`). A tab delivers
// numbered changes in order, each once: a notice that comes after a gap (one the tab did not
// hear: its leader ended between a commit and its notice, or the tab slept) waits while the
// tab reads what it missed from the feed, and one it delivered already is dropped. When the
// feed no longer reaches back that far, subscribers get one notice with `reset: true`: read
// afresh. Notices without a number (a write answered again from the request log after a
// hand-off, an import) are delivered once per request id.
import { RunStoreError } from './errors.js';
import { AREAS } from './methods.js';

const knownAreas = new Set(AREAS);

/** Request ids remembered, as many as the store's request log keeps (MAX_KEPT_REQUESTS). */
const REMEMBERED = 10_000;

/**
 * A leader's worker announces the changes it holds once it holds this many (serve.js), so a
 * leader that ended left at most this many minus one unannounced: a tab whose first read of
 * the feed was under way while a leader changed reads back this many from where the new
 * leader began.
 */
export const MAX_UNANNOUNCED = 32;

/** A number past every change: the feed answers it with its newest number. */
export const PAST_EVERY_CHANGE = Number.MAX_SAFE_INTEGER;

/** The most reads of the feed one catch-up makes (each reads up to 1,000 changes). */
const MAX_READS = 20;

/** After a failed read (a leader changing), the next try comes this much later, at most this often in a row. */
const RETRY_MS = 500;
const MAX_FAILED_READS = 10;

export class Changes {
  #subscribers = new Set();
  /** The request ids of the changes delivered lately, oldest first. */
  #heard = new Set();
  /** The number of the newest change delivered; null until the first is heard or read. */
  #delivered = null;
  /**
   * The feed's newest number as read when the first subscriber subscribed (lowered by
   * MAX_UNANNOUNCED from where a new leader began, when a leader changed during that read),
   * or null while that read runs. The first notice heard at or below floor + 1 is where
   * delivery starts: it may be of a commit made after subscribing but before the read
   * (notices and answers travel on different channels).
   */
  #floor = null;
  /** Numbered changes heard after a gap, delivered once the gap is filled from the feed. */
  #waiting = [];
  /** The catch-up running now, or null. */
  #catchingUp = null;
  /** Catch-ups in a row whose read of the feed failed. */
  #failedReads = 0;
  /** Whether a tab may have missed a notice while a catch-up ran: read again after it. */
  #again = false;
  /** Whether the tab may have missed notices (`catchUp`) since the floor was read. */
  #missed = false;
  /** The lowest number a new leader said the feed stood at as it began, while the floor was read; null if none said. */
  #missedAt = null;
  /** Reads the store's feed after a number: `(after) => Promise<ChangesSince>`; null: no catching up. */
  #readFeed;

  constructor(readFeed = null) {
    this.#readFeed = readFeed;
  }

  /** Adds a subscriber; returns the function that removes it. Bad arguments throw INVALID_INPUT. */
  subscribe(filter, callback) {
    if (typeof callback !== 'function') {
      throw new RunStoreError('INVALID_INPUT', 'callback must be a function', { field: 'callback' });
    }
    const entry = { matches: matcher(readFilter(filter)), callback };
    const first = this.#subscribers.size === 0;
    this.#subscribers.add(entry);
    if (first) {
      // The first subscriber learns where the feed stands now: a notice lost from here on is
      // caught up from there.
      this.#delivered = null;
      this.#floor = null;
      this.#waiting = [];
      this.#missed = false;
      this.#missedAt = null;
      void this.#start();
    }
    return () => {
      this.#subscribers.delete(entry);
    };
  }

  /** Hands `change` to every subscriber whose filter it matches, in the feed's order and once. */
  dispatch(change) {
    if (this.#subscribers.size === 0) return;
    const number = change?.number;
    // Without a feed to fill gaps from, notices are delivered as they come.
    if (!Number.isSafeInteger(number) || !this.#readFeed) {
      this.#deliver(change);
      return;
    }
    const delivered = this.#delivered;
    if (delivered !== null && number <= delivered) return;
    // The next one goes at once, also while a catch-up reads (which skips what was delivered),
    // and with it what waited right behind it.
    if (this.#startsAt(number) || number === delivered + 1) {
      this.#delivered = number;
      this.#deliver(change);
      this.#deliverWaiting();
      return;
    }
    this.#waiting.push(change);
    void this.#start();
  }

  /**
   * Reads from the store's feed what was committed after the newest change delivered (or,
   * before any notice came, after the floor) and delivers it: for when the tab may have
   * missed notices (a new leader, a wake). Resolves once caught up; a failed read leaves it
   * to the next call.
   */
  catchUp(feedAt) {
    this.#missed = true;
    if (Number.isSafeInteger(feedAt) && this.#floor === null) this.#missedAt = Math.min(this.#missedAt ?? feedAt, feedAt);
    return this.#start();
  }

  /** Starts a catch-up, or has the one running read once more after it. */
  #start() {
    if (!this.#readFeed || this.#subscribers.size === 0) return Promise.resolve();
    if (this.#catchingUp) {
      // A trigger during a catch-up that began before it reads once more after it.
      this.#again = true;
      return this.#catchingUp;
    }
    this.#catchingUp = this.#fill().finally(() => {
      this.#catchingUp = null;
      if (this.#again) {
        this.#again = false;
        void this.#start();
      }
    });
    return this.#catchingUp;
  }

  async #fill() {
    try {
      if (this.#floor === null) {
        const { newest } = await this.#readFeed(PAST_EVERY_CHANGE);
        // The read may have been answered by a leader that took over from one that ended
        // holding changes it had not announced (made after this subscription, maybe), just
        // below where the new leader began.
        const from = Math.min(newest, this.#missedAt ?? newest);
        this.#floor = this.#missed ? Math.max(0, from - MAX_UNANNOUNCED) : newest;
        this.#missedAt = null;
        // Notices heard during the read that start at or below the floor need no read: the
        // first of them is where this tab starts, as if heard after it.
        const first = Math.min(...this.#waiting.map((change) => change.number));
        if (this.#startsAt(first) && !this.#missed) {
          this.#delivered = first - 1;
          this.#deliverWaiting();
        }
      }
      // Until a notice comes, the floor is all a tab knows: the next notice is where it starts,
      // unless notices may have been missed (a leader that ended before announcing a commit):
      // then what came after the floor is read.
      if (this.#delivered === null && this.#waiting.length === 0 && !this.#missed) {
        this.#failedReads = 0;
        return;
      }
      this.#missed = false;
      // Notices heard since subscribing are delivered from the first of them; without any,
      // what came after the floor is read.
      this.#delivered ??= Math.min(this.#floor, ...this.#waiting.map((change) => change.number - 1));
      // A notice behind a gap was committed, so the feed has what comes before it (or says
      // reset); a read made before those commits finds them on a later one.
      for (let reads = 0; reads < MAX_READS; reads++) {
        const page = await this.#readFeed(this.#delivered);
        if (page.reset) {
          this.#delivered = page.newest;
          this.#deliver(resetNotice(page.newest));
        }
        for (const change of page.changes) this.#deliverNext(change);
        this.#deliverWaiting();
        const more = !page.reset && page.changes.length > 0 && this.#delivered < page.newest;
        if (!more && this.#waiting.length === 0) break;
      }
      this.#failedReads = 0;
    } catch {
      // The store's leader is changing (or the store is closing): try again a little later,
      // for a notice may have been lost in the change. When no try reaches a leader, what was
      // heard is delivered past its gap rather than never.
      if (++this.#failedReads <= MAX_FAILED_READS) setTimeout(() => void this.#start(), RETRY_MS).unref?.();
      else this.#delivered = null;
    }
    // Without a read, the first notice heard since subscribing is where this tab starts.
    if (this.#delivered === null && this.#waiting.length > 0) {
      this.#delivered = Math.min(...this.#waiting.map((change) => change.number)) - 1;
    }
    // What waits right after what was delivered goes now, read or not.
    this.#deliverWaiting();
  }

  /**
   * Whether the notice numbered `number` is where this tab starts: the first one since the
   * floor was read, unless it shows a gap above the floor (while that read runs, notices wait).
   */
  #startsAt(number) {
    return this.#delivered === null && this.#floor !== null && number <= this.#floor + 1;
  }

  /** Delivers the waiting notices that come next, in order; keeps those behind a gap. */
  #deliverWaiting() {
    const waiting = this.#waiting.sort((a, b) => a.number - b.number);
    this.#waiting = [];
    for (const change of waiting) this.#deliverNext(change);
  }

  /** Delivers `change` if it is the next one; keeps it for later if it comes after a gap. */
  #deliverNext(change) {
    if (change.number <= this.#delivered) return;
    if (change.number === this.#delivered + 1) {
      this.#delivered = change.number;
      this.#deliver(change);
    } else {
      this.#waiting.push(change);
    }
  }

  #deliver(change) {
    if (!this.#firstHearing(change.requestId)) return;
    for (const { matches, callback } of this.#subscribers) {
      if (!change.reset && !matches(change)) continue;
      try {
        callback(change);
      } catch (error) {
        // One subscriber's failure must not keep the others from hearing of the change.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }

  #firstHearing(requestId) {
    if (typeof requestId !== 'string') return true;
    if (this.#heard.has(requestId)) return false;
    this.#heard.add(requestId);
    if (this.#heard.size > REMEMBERED) this.#heard.delete(this.#heard.values().next().value);
    return true;
  }
}

/** What subscribers hear when the feed cannot tell what they missed: everything may have changed. */
export function resetNotice(newest) {
  return { reset: true, number: newest, requestId: null, areas: [...AREAS], workflowIds: [], heads: {}, revisions: [] };
}

/**
 * The filter's fields, each read once (a getter or Proxy that throws is INVALID_INPUT naming
 * the filter, as the store names an argument it cannot read).
 */
function readFilter(filter) {
  if (filter === undefined || filter === null) return {};
  try {
    if (typeof filter !== 'object' || Array.isArray(filter)) throw new RunStoreError('INVALID_INPUT', 'filter must be an object', { field: 'filter' });
    const read = {};
    for (const key of Object.keys(filter)) {
      if (key !== 'areas' && key !== 'workflowIds') {
        throw new RunStoreError('INVALID_INPUT', `unknown filter field ${clip(key)}`, { field: `filter.${clip(key)}` });
      }
      read[key] = stringList(filter[key], key);
    }
    return read;
  } catch (error) {
    if (error instanceof RunStoreError) throw error;
    throw new RunStoreError('INVALID_INPUT', 'filter could not be read (a getter or Proxy trap threw)', { field: 'filter' });
  }
}

function matcher({ areas, workflowIds }) {
  for (const area of areas ?? []) {
    if (!knownAreas.has(area)) {
      throw new RunStoreError('INVALID_INPUT', `unknown area ${clip(area)}; one of ${AREAS.join(', ')}`, { field: 'filter.areas' });
    }
  }
  const wanted = areas && new Set(areas);
  const workflows = workflowIds && new Set(workflowIds);
  return (change) =>
    (!wanted || change.areas.some((a) => wanted.has(a))) && (!workflows || change.workflowIds.some((w) => workflows.has(w)));
}

/** An array of strings, copied; null for an absent one. */
function stringList(value, name) {
  if (value === undefined || value === null) return null;
  const bad = () => new RunStoreError('INVALID_INPUT', `${name} must be an array of strings`, { field: `filter.${name}` });
  if (!Array.isArray(value)) throw bad();
  const items = [];
  // Index by index: a hole is no string (and a sparse array of length 2 ** 32 - 1 fails at once).
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    if (typeof item !== 'string') throw bad();
    items.push(item);
  }
  return items;
}

/** A caller's text cut to a length a message can quote. */
function clip(text, chars = 64) {
  return text.length <= chars ? text : `${text.slice(0, chars)}… (${text.length} characters)`;
}
