// The steps the crash test's writer commits and its checker expects (as natively in
// tests/crash_consistency/plan.rs): step k depends only on k and the seed, so a checker that
// knows how many steps committed knows the whole store.

export const WORKFLOWS = 3;
const MAX_EVENTS = 20;
/** Step k completes the outbox row of step k - SETTLE_LAG and cancels the timer of k - TIMER_LAG. */
export const SETTLE_LAG = 3;
export const TIMER_LAG = 2;
/** The checkpoint whose revision counts the steps: revision = steps committed - 1. */
export const CHECKPOINT = 'cp';
export const EFFECT = 'fx';
export const VISIBILITY = 'vis';

/** A tiny xorshift generator: deterministic per seed. */
export function xorshift(seed) {
  let x = (seed | 0) || 1;
  return {
    below(bound) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % bound;
    },
  };
}

/** Spreads neighbouring integers over 32 bits (a murmur3 finaliser). */
function mix(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

export const workflow = (k) => `wf-${k % WORKFLOWS}`;
export const outboxKey = (k) => `step-${k}`;
export const timerId = (k) => `t-${k}`;
/** Steps at k % 3 === 2 go without a request id; the others are exactly-once. */
export const requestId = (k) => (k % 3 === 2 ? undefined : `req-${k}`);

export function effect(k) {
  return {
    effectId: EFFECT, capabilityId: 'crash', revision: k / 2, request: { step: k },
    status: { type: 'started' }, updatedAt: k,
  };
}

export function visibility(k) {
  return {
    workflowId: VISIBILITY, runId: `r${k}`, workflowType: 'crash', status: 'running',
    startTime: k, searchAttributes: { step: k },
  };
}

export class Plan {
  constructor(seed) {
    this.seed = seed;
    this.ends = []; // ends[k]: the head of step k's workflow once step k committed
  }

  /** How many events step k appends: 1 to MAX_EVENTS. */
  size(k) {
    return 1 + (mix(this.seed ^ mix(k)) % MAX_EVENTS);
  }

  /** The head of step k's workflow before step k. */
  headBefore(k) {
    if (k < WORKFLOWS) return 0;
    while (this.ends.length <= k - WORKFLOWS) {
      const j = this.ends.length;
      this.ends.push(this.headBefore(j) + this.size(j));
    }
    return this.ends[k - WORKFLOWS];
  }

  /** The head of workflow w once steps 0..n committed. */
  headAfter(n, w) {
    for (let j = n - 1; j >= 0; j--) {
      if (j % WORKFLOWS === w) return this.headBefore(j) + this.size(j);
    }
    return 0;
  }

  events(k) {
    return Array.from({ length: this.size(k) }, (_, i) => ({
      type: 'custom', name: `s${k}`, recordedAt: k, data: { step: k, i },
    }));
  }

  /** Step k: an append with its outbox row, the checkpoint swap to revision k, a timer, the
   * cancellation of an earlier timer, the settlement of an earlier row, and an effect swap
   * (even k) or a visibility upsert (odd k). */
  step(k) {
    const operations = [
      {
        op: 'append', workflowId: workflow(k), expectedSeq: this.headBefore(k), events: this.events(k),
        outbox: [{
          dispatchKey: outboxKey(k), workflowId: workflow(k), ordinal: k, activityType: 'act',
          input: new Uint8Array([k & 255]), visibleAfter: 0,
        }],
      },
      {
        op: 'compareAndSwapCheckpoint', expectedRevision: k === 0 ? null : k - 1,
        checkpoint: { checkpointId: CHECKPOINT, revision: k, state: { step: k }, updatedAt: k },
      },
      { op: 'scheduleTimer', workflowId: workflow(k), timerId: timerId(k), fireAt: k },
    ];
    if (k >= TIMER_LAG) {
      operations.push({ op: 'cancelTimer', workflowId: workflow(k - TIMER_LAG), timerId: timerId(k - TIMER_LAG) });
    }
    if (k >= SETTLE_LAG) {
      // Never claimed: the row's token is still 0.
      operations.push({ op: 'completeOutbox', dispatchKey: outboxKey(k - SETTLE_LAG), claimToken: 0 });
    }
    operations.push(k % 2 === 0
      ? { op: 'compareAndSwapEffect', record: effect(k), expectedRevision: k === 0 ? null : k / 2 - 1 }
      : { op: 'upsertVisibility', record: visibility(k) });
    const id = requestId(k);
    return id === undefined ? { operations } : { requestId: id, operations };
  }

  /** What committing step k reports, as JSON. */
  outcomes(k) {
    const outcomes = [
      { op: 'append', head: this.headBefore(k) + this.size(k) },
      { op: 'compareAndSwapCheckpoint', revision: k },
      { op: 'scheduleTimer' },
    ];
    if (k >= TIMER_LAG) outcomes.push({ op: 'cancelTimer', removed: true });
    if (k >= SETTLE_LAG) outcomes.push({ op: 'completeOutbox' });
    outcomes.push(k % 2 === 0 ? { op: 'compareAndSwapEffect', revision: k / 2 } : { op: 'upsertVisibility' });
    return JSON.stringify(outcomes);
  }
}
