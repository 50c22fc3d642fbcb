// Change notices and their subscribers: what `store.subscribe(filter, callback)` delivers.
// A tab may hear of one commit twice (a write sent again after a hand-off is announced again,
// for the tabs that missed the first notice): each request id is delivered once.
import { RunStoreError } from './errors.js';
import { AREAS } from './methods.js';

const knownAreas = new Set(AREAS);

/** Request ids remembered, as many as the store's request log keeps (MAX_KEPT_REQUESTS). */
const REMEMBERED = 10_000;

export class Changes {
  #subscribers = new Set();
  /** The request ids of the changes delivered lately, oldest first. */
  #heard = new Set();

  /** Adds a subscriber; returns the function that removes it. Bad arguments throw INVALID_INPUT. */
  subscribe(filter, callback) {
    if (typeof callback !== 'function') {
      throw new RunStoreError('INVALID_INPUT', 'callback must be a function', { field: 'callback' });
    }
    const entry = { matches: matcher(readFilter(filter)), callback };
    this.#subscribers.add(entry);
    return () => {
      this.#subscribers.delete(entry);
    };
  }

  /** Hands `change` to every subscriber whose filter it matches, unless its request id was heard before. */
  dispatch(change) {
    if (!this.#firstHearing(change.requestId)) return;
    for (const { matches, callback } of this.#subscribers) {
      if (!matches(change)) continue;
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
