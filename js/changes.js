// Change notices and their subscribers: what `store.subscribe(filter, callback)` delivers.
import { RunStoreError } from './errors.js';
import { AREAS } from './methods.js';

const knownAreas = new Set(AREAS);

export class Changes {
  #subscribers = new Set();

  /** Adds a subscriber; returns the function that removes it. Bad filters throw INVALID_INPUT. */
  subscribe(filter, callback) {
    if (typeof callback !== 'function') {
      throw new RunStoreError('INVALID_INPUT', 'callback must be a function', { field: 'callback' });
    }
    const entry = { matches: matcher(filter ?? {}), callback };
    this.#subscribers.add(entry);
    return () => {
      this.#subscribers.delete(entry);
    };
  }

  /** Hands `change` to every subscriber whose filter it matches. */
  dispatch(change) {
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
}

function matcher(filter) {
  if (typeof filter !== 'object' || Array.isArray(filter)) {
    throw new RunStoreError('INVALID_INPUT', 'filter must be an object', { field: 'filter' });
  }
  for (const key of Object.keys(filter)) {
    if (key !== 'areas' && key !== 'workflowIds') {
      throw new RunStoreError('INVALID_INPUT', `unknown filter field ${key}`, { field: `filter.${key}` });
    }
  }
  const areas = stringSet(filter.areas, 'areas');
  const workflows = stringSet(filter.workflowIds, 'workflowIds');
  for (const area of areas ?? []) {
    if (!knownAreas.has(area)) {
      throw new RunStoreError('INVALID_INPUT', `unknown area ${area}; one of ${AREAS.join(', ')}`, { field: 'filter.areas' });
    }
  }
  return (change) =>
    (!areas || change.areas.some((a) => areas.has(a))) &&
    (!workflows || change.workflowIds.some((w) => workflows.has(w)));
}

function stringSet(value, name) {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new RunStoreError('INVALID_INPUT', `${name} must be an array of strings`, { field: `filter.${name}` });
  }
  return new Set(value);
}
