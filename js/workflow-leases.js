// The leases a workflow engine holds on a sync server's workflows, when its store syncs
// (`WorkflowEngine.start(store, { leases: { url, token, namespace, ttlMs } })`; the server's
// side is in docs/servers.md, "Leases"). An engine with leases runs a run only while it holds
// the run's lease: it takes the lease before it runs the run, renews it at a third of its
// duration, pushes the run's last events and gives the lease up when the run ends. A run whose
// lease another device holds is shown, not run; once that lease expires (its device went
// away), the engine takes it, pulls what the other device pushed, and runs the run from there.
// A renewal the server refuses, or none answered before the lease's end by this device's own
// clock, stops the run here: another device may be running it. The epoch of each lease taken
// is kept in the store, so that a run's events recorded before a reload are still pushed
// under the lease they were recorded under. A checkout is a lease taken for longer and not
// renewed until its last `ttlMs`: the run runs here until its end, offline and across a
// reload (its end is kept with the epoch), and other devices only show it.
import { RunStoreError } from './errors.js';

/** The longest lease: a timer of this device counts down to a tenth before its end, and timers end at 2^31 - 1 ms (about 24.8 days). */
export const MAX_TTL_MS = 20 * 24 * 3_600_000;

/** The parts of `options.leases` the engine reads, checked; INVALID_INPUT naming the field. */
export function readLeaseOptions(options) {
  const invalid = (field, reason) => new RunStoreError('INVALID_INPUT', `options.leases.${field} ${reason}`, { field: `options.leases.${field}` });
  const { url, token, namespace = 'default', ttlMs = 30_000, fetch = globalThis.fetch } = options;
  if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw invalid('url', 'must be an absolute http(s) URL');
  if (typeof token !== 'string' || token === '') throw invalid('token', 'must be a non-empty string');
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) throw invalid('namespace', "must be 1 to 64 ASCII letters, digits, '-', '_' or '.'");
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 300 || ttlMs > MAX_TTL_MS) throw invalid('ttlMs', `must be an integer from 300 to ${MAX_TTL_MS}`);
  if (typeof fetch !== 'function') throw invalid('fetch', 'must be a function');
  return { url: url.replace(/\/+$/, ''), token, namespace, ttlMs, fetch };
}

export class LeaseKeeper {
  #settings;
  #holder;
  #epochs;
  #onLost;
  /**
   * workflowId → { epoch, until (this device's monotonic clock), untilWall (its wall clock),
   * pulled, deadline (its timer), checkoutUntil (its wall clock; a checkout's only) }
   */
  #held = new Map();
  /** workflowId → the device that holds the lease, as the server last said (LEASE_HELD). */
  #others = new Map();
  /** Raised by `forget`: a take answered after it stores nothing. */
  #generation = 0;
  #timer = null;

  /**
   * `epochs`: `load(workflowId)` and `save(workflowId, { epoch, pulled })` of the last epoch
   * this device took, and whether it pulled under it, kept in the store.
   * `onLost(workflowId)`: the lease may be another device's now; its run must stop here.
   */
  constructor(settings, holder, epochs, onLost) {
    this.#settings = settings;
    this.#holder = holder;
    this.#epochs = epochs;
    this.#onLost = onLost;
    this.#timer = setInterval(() => this.#renewAll(), Math.floor(settings.ttlMs / 3));
    this.#timer.unref?.();
  }

  get settings() {
    return this.#settings;
  }

  /**
   * The lease a push of `workflowId` goes under (`store.sync`'s `leases` option), or null: the
   * one held, else the last one this device took (the server admits pushes under it until
   * another device takes the lease).
   */
  leaseOf = async (workflowId) => {
    const epoch = this.#held.get(workflowId)?.epoch ?? (await this.#epochs.load(workflowId))?.epoch;
    return epoch === undefined ? null : { holder: this.#holder, epoch };
  };

  /** Whether this engine holds `workflowId`'s lease (pulled or not). */
  isHeld(workflowId) {
    return this.#held.has(workflowId);
  }

  /** Whether this engine holds `workflowId`'s lease and has pulled what came before it. */
  holds(workflowId) {
    return this.#held.get(workflowId)?.pulled === true;
  }

  /** The device that holds `workflowId`'s lease, as the server last answered here, or null. */
  holderElsewhere(workflowId) {
    return this.#held.has(workflowId) ? null : (this.#others.get(workflowId) ?? null);
  }

  /**
   * Takes (or renews) `workflowId`'s lease. Resolves to `held`, or to `pull` when the events
   * another device pushed under a lease since this device last held it must be pulled before
   * the run goes on here, or to `elsewhere` when another device holds it, or to `unavailable`
   * when the server cannot be asked. Rejects when the server refuses the request itself (a
   * token without the namespace, say), or the store cannot keep the new epoch.
   */
  take(workflowId) {
    const held = this.#held.get(workflowId);
    // A checkout is renewed only in its last ttlMs: asking now would shorten it.
    if (held && this.#checkedOut(held)) return Promise.resolve(held.pulled ? 'held' : 'pull');
    return this.#take(workflowId, this.#settings.ttlMs, false).then((outcome) => (outcome === 'superseded' ? 'unavailable' : outcome));
  }

  /**
   * Checks `workflowId` out for `ttlMs`: takes its lease (or renews the one held) for that
   * long, kept in the store with its end. Resolves as `take` does; rejects with LEASE_HELD or
   * FENCED while another device holds the lease.
   */
  async checkout(workflowId, ttlMs) {
    // A renewal answered meanwhile replaced the lease asked on: asked again, on the new one.
    for (let tries = 0; tries < 5; tries++) {
      const outcome = await this.#take(workflowId, ttlMs, true);
      if (outcome !== 'superseded') return outcome;
    }
    return 'unavailable';
  }

  /** The end of `workflowId`'s checkout by this device's wall clock, while it holds; else null. */
  checkedOutUntil(workflowId) {
    const until = this.#held.get(workflowId)?.checkoutUntil;
    return until !== undefined && Date.now() < until ? until : null;
  }

  /** Whether a held lease is a checkout not yet in its last ttlMs, by both of this device's clocks. */
  #checkedOut(held) {
    const { ttlMs } = this.#settings;
    return held.checkoutUntil !== undefined && Date.now() < held.checkoutUntil - ttlMs && performance.now() < held.until - ttlMs;
  }

  async #take(workflowId, ttlMs, checkout) {
    const held = this.#held.get(workflowId);
    const generation = this.#generation;
    let lease;
    let known;
    const asked = performance.now();
    const askedWall = Date.now();
    try {
      known = held ? { epoch: held.epoch, pulled: held.pulled, checkoutUntil: held.checkoutUntil ?? null } : await this.#epochs.load(workflowId);
      if (!held && !checkout && known?.checkoutUntil && askedWall < known.checkoutUntil - this.#settings.ttlMs) {
        return this.#stale(workflowId, generation, undefined) ?? this.#resumeCheckout(workflowId, known);
      }
      lease = await this.#call(workflowId, '', { holder: this.#holder, ...(held ? { epoch: held.epoch } : {}), ttlMs });
    } catch (error) {
      if (error.code === 'LEASE_HELD' || error.code === 'FENCED') {
        if (typeof error.holder === 'string') this.#others.set(workflowId, error.holder);
        if (this.#held.get(workflowId) === held) this.#drop(workflowId);
        // A checkout kept from before is not this device's any more.
        if (known?.checkoutUntil) await this.#epochs.save(workflowId, { ...known, checkoutUntil: null }).catch(() => {});
        if (checkout) throw error;
        return 'elsewhere';
      }
      // Refused for what was asked (a token without the namespace, say): no later try does better.
      const status = error?.httpStatus ?? 0;
      if (status >= 400 && status < 500 && status !== 408 && status !== 429) throw error;
      return 'unavailable';
    }
    this.#others.delete(workflowId);
    // Given up or forgotten while the server answered: that answer is not this engine's lease.
    const stale = this.#stale(workflowId, generation, held);
    if (stale) return stale;
    const until = asked + lease.ttlMs;
    // An answer that came too late to leave any of the lease by this device's clock is none.
    if (performance.now() >= until - this.#margin()) return 'unavailable';
    // Under the epoch this device held last (and pulled under), or the first lease of a run it
    // never held, no other device ran the run since; under any other (a later one, or a lower
    // one after the server lost its leases), what the server holds comes first.
    const pulled = lease.epoch === known?.epoch ? known.pulled : known === null && lease.epoch === 1;
    const untilWall = askedWall + lease.ttlMs;
    // A renewal in a checkout's last ttlMs ends it: the lease is an ordinary one from then on.
    const checkoutUntil = checkout ? untilWall : null;
    if (lease.epoch !== known?.epoch || checkout || (known?.checkoutUntil ?? null) !== null) {
      await this.#epochs.save(workflowId, { epoch: lease.epoch, pulled, checkoutUntil });
      const staleNow = this.#stale(workflowId, generation, held);
      if (staleNow) return staleNow;
    }
    this.#hold(workflowId, { epoch: lease.epoch, until, untilWall, pulled, ...(checkout ? { checkoutUntil } : {}) });
    return pulled ? 'held' : 'pull';
  }

  /**
   * A checkout taken before a reload (or before another tab led), held again without asking
   * the server (it may be out of reach) until its end, which only the wall clock still
   * measures.
   */
  #resumeCheckout(workflowId, known) {
    const until = performance.now() + (known.checkoutUntil - Date.now());
    const { epoch, pulled, checkoutUntil } = known;
    this.#hold(workflowId, { epoch, until, untilWall: checkoutUntil, pulled, checkoutUntil });
    return pulled ? 'held' : 'pull';
  }

  /**
   * Why an answer asked for under `generation`, on the lease `held` then, no longer counts:
   * `unavailable` when the leases were forgotten since, `superseded` when another answer
   * replaced the lease (a renewal, asked on again), else null.
   */
  #stale(workflowId, generation, held) {
    if (this.#generation !== generation) return 'unavailable';
    return this.#held.get(workflowId) === held ? null : 'superseded';
  }

  /** Keeps `entry` as `workflowId`'s lease held, with the timer that stops its run before the lease can end on the server, renewed or not. */
  #hold(workflowId, entry) {
    clearTimeout(this.#held.get(workflowId)?.deadline);
    entry.deadline = setTimeout(() => this.#expire(workflowId, entry), entry.until - this.#margin() - performance.now());
    entry.deadline.unref?.();
    this.#held.set(workflowId, entry);
  }

  /**
   * Whether `workflowId`'s lease is held and not near its end by either of this device's
   * clocks: the monotonic one, which wall-clock steps do not move, and the wall clock, which
   * goes on while the device sleeps (the monotonic clock stops with a suspended system, and a
   * timer set before comes late). A step body starts only while this holds.
   */
  valid(workflowId) {
    const held = this.#held.get(workflowId);
    if (!held) return false;
    const margin = this.#margin();
    return performance.now() < held.until - margin && Date.now() < held.untilWall - margin;
  }

  /** Gives up a lease this device may no longer hold (a body was about to start past its end): its run stops here. */
  lapse(workflowId) {
    const held = this.#held.get(workflowId);
    if (held) this.#expire(workflowId, held);
  }

  /** How long before a lease's end by this device's clock its run stops: a tenth of the lease. */
  #margin() {
    return Math.floor(this.#settings.ttlMs / 10);
  }

  #expire(workflowId, entry) {
    if (this.#held.get(workflowId) !== entry) return;
    this.#drop(workflowId);
    this.#onLost(workflowId);
  }

  /** Marks the server's events as pulled under the held lease: the run may go on here. */
  async pulled(workflowId) {
    const held = this.#held.get(workflowId);
    if (!held) return;
    // Kept too: a device that takes this epoch back (after a reload, or once its entry lapsed)
    // must not skip a pull it never finished.
    await this.#epochs.save(workflowId, { epoch: held.epoch, pulled: true, checkoutUntil: held.checkoutUntil ?? null });
    held.pulled = true;
  }

  /** Gives the lease up (the run ended and its events were pushed); its epoch stays kept for later pushes. */
  async release(workflowId) {
    const held = this.#held.get(workflowId);
    if (!held) return;
    clearTimeout(held.deadline);
    this.#held.delete(workflowId);
    try {
      // A checkout given up is not held again after a reload.
      if (held.checkoutUntil !== undefined) await this.#epochs.save(workflowId, { epoch: held.epoch, pulled: held.pulled, checkoutUntil: null });
      await this.#call(workflowId, '/release', { holder: this.#holder, epoch: held.epoch });
    } catch {
      // Offline, or taken over already: the lease expires on its own.
    }
  }

  /** Forgets the leases held, without giving them up (another engine of this device takes them on). */
  forget() {
    this.#generation += 1;
    for (const held of this.#held.values()) clearTimeout(held.deadline);
    this.#held.clear();
  }

  /**
   * Stops renewing. The leases held are left to expire, not given up: a run's last events may
   * not be pushed yet, and another device must not take the run before they are.
   */
  stop() {
    clearInterval(this.#timer);
    this.forget();
  }

  #drop(workflowId) {
    clearTimeout(this.#held.get(workflowId)?.deadline);
    this.#held.delete(workflowId);
  }

  /**
   * Renews every lease held, all at once (one after another, a slow server would make the last
   * lapse), each with one renewal in flight at most; one another device took stops its run
   * (the deadline timer stops the rest).
   */
  #renewAll() {
    for (const [workflowId, held] of [...this.#held]) {
      if (held.renewing) continue;
      held.renewing = true;
      this.take(workflowId)
        .then((outcome) => {
          // A late answer to an older renewal does not stop a run under a newer lease.
          if (outcome === 'elsewhere' && !this.#held.has(workflowId)) this.#onLost(workflowId);
        })
        .catch(() => {}) // the epoch is the held one: nothing to keep
        .finally(() => {
          held.renewing = false;
        });
    }
  }

  async #call(workflowId, path, body) {
    // Loaded with the store's sync code, on first use: an engine without leases never needs it.
    const { request } = await import('./sync.js');
    // A request that hangs (packets dropped) must not hold a renewal past its use, also with a
    // fetch that does not heed its signal.
    const timeoutMs = Math.floor(this.#settings.ttlMs / 3);
    const controller = new AbortController();
    let timer;
    const timedOut = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const error = new RunStoreError('UNAVAILABLE', `the lease request was not answered within ${timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    const settings = { ...this.#settings, signal: controller.signal };
    try {
      return await Promise.race([request(settings, 'POST', `workflows/${encodeURIComponent(workflowId)}/lease${path}`, body), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
