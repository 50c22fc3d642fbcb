// Delivers the outbox's activities at least once: claims due rows, performs each activity
// through the effect ledger under its dispatch key (so a delivery repeated after a reload
// does not repeat the effect), then settles the row under its claim's token: done, retried
// later with the next attempt, or failed for good (the dead letter) once its attempts are
// spent. A claim that went stale and was taken again elsewhere settles nothing (CONFLICT).

import { performOnce } from './effects.js';
import { ACTIVITY_ATTEMPTS, callTool, retryDelayMs } from './workflows.js';

const decoder = new TextDecoder();
const POLL_MS = 200;
const CLAIM_LIMIT = 8;
// A claim this old was lost in this page (its delivery failed on a store error): deliver again.
const STALE_CLAIM_MS = 30_000;

export class Dispatcher {
  #store;
  #onSettled;

  constructor(store, { onSettled }) {
    this.#store = store;
    this.#onSettled = onSettled;
  }

  start() {
    const tick = async () => {
      try {
        const now = Date.now();
        await this.#store.rearmStaleClaims(now - STALE_CLAIM_MS, now, CLAIM_LIMIT);
        const rows = await this.#store.claimOutbox(now, CLAIM_LIMIT);
        for (const row of rows) this.#deliver(row);
      } catch (error) {
        console.error('outbox claim failed:', error);
      }
      setTimeout(tick, POLL_MS);
    };
    tick();
  }

  async #deliver(row) {
    const store = this.#store;
    const key = row.dispatchKey;
    const token = row.claimToken;
    try {
      const request = JSON.parse(decoder.decode(row.input));
      try {
        await performOnce(store, { capability: row.activityType, key, request }, (args) =>
          callTool(row.activityType, key, args),
        );
      } catch (error) {
        if (error.code) throw error; // the store's, not the service's
        const attempt = row.attempt + 1;
        if (attempt < ACTIVITY_ATTEMPTS) await store.retryOutbox(key, token, attempt, Date.now() + retryDelayMs(row.attempt));
        else await store.failOutbox(key, token, `${row.activityType}: ${error.message ?? error}`);
        return;
      }
      await store.completeOutbox(key, token);
    } catch (error) {
      // The row stays claimed; the next page load re-arms it.
      console.error(`delivery of ${key} failed:`, error);
    } finally {
      this.#onSettled(row.workflowId);
    }
  }
}
