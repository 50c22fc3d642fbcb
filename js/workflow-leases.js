// The leases a workflow engine holds on a sync server's workflows, when its store syncs
// (`WorkflowEngine.start(store, { leases: { url, token, namespace, ttlMs } })`; the server's
// side is in docs/servers.md, "Leases"). An engine with leases runs a run only while it holds
// the run's lease: it takes the lease before it runs the run, renews it at a third of its
// duration, pushes the run's last events and gives the lease up when the run ends. A run whose
// lease another device holds is shown, not run; once that lease expires (its device went
// away), the engine takes it, pulls what the other device pushed, and runs the run from there.
// A renewal the server refuses, or none answered before the lease's end by this device's own
// clock, stops the run here: another device may be running it.
import { RunStoreError } from './errors.js';

/** The parts of `options.leases` the engine reads, checked; INVALID_INPUT naming the field. */
export function readLeaseOptions(options) {
  const invalid = (field, reason) => new RunStoreError('INVALID_INPUT', `options.leases.${field} ${reason}`, { field: `options.leases.${field}` });
  const { url, token, namespace = 'default', ttlMs = 30_000, fetch = globalThis.fetch } = options;
  if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw invalid('url', 'must be an absolute http(s) URL');
  if (typeof token !== 'string' || token === '') throw invalid('token', 'must be a non-empty string');
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) throw invalid('namespace', "must be 1 to 64 ASCII letters, digits, '-', '_' or '.'");
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 300) throw invalid('ttlMs', 'must be an integer of 300 or more');
  if (typeof fetch !== 'function') throw invalid('fetch', 'must be a function');
  return { url: url.replace(/\/+$/, ''), token, namespace, ttlMs, fetch };
}

export class LeaseKeeper {
  #settings;
  #holder;
  #onLost;
  /** workflowId → { epoch, until (this device's monotonic clock), pulled } */
  #held = new Map();
  /** workflowId → the epoch of a lease given up here, which the server still admits pushes under until another device takes it. */
  #given = new Map();
  #timer = null;

  /** `onLost(workflowId)`: the lease may be another device's now; its run must stop here. */
  constructor(settings, holder, onLost) {
    this.#settings = settings;
    this.#holder = holder;
    this.#onLost = onLost;
    this.#timer = setInterval(() => this.#renewAll(), Math.floor(settings.ttlMs / 3));
    this.#timer.unref?.();
  }

  get settings() {
    return this.#settings;
  }

  /** The lease a push of `workflowId` goes under (`store.sync`'s `leases` option), or null. */
  leaseOf = (workflowId) => {
    const held = this.#held.get(workflowId);
    if (held) return { holder: this.#holder, epoch: held.epoch };
    const epoch = this.#given.get(workflowId);
    return epoch === undefined ? null : { holder: this.#holder, epoch };
  };

  /** Whether this engine holds `workflowId`'s lease and has pulled what came before it. */
  holds(workflowId) {
    return this.#held.get(workflowId)?.pulled === true;
  }

  /**
   * Takes (or renews) `workflowId`'s lease. Resolves to `held` (and whether the server's events
   * must be pulled before the run goes on here), or to `elsewhere` when another device holds it,
   * or to `unavailable` when the server cannot be asked.
   */
  async take(workflowId) {
    const held = this.#held.get(workflowId);
    const asked = performance.now();
    let lease;
    try {
      lease = await this.#call(workflowId, '', { holder: this.#holder, ...(held ? { epoch: held.epoch } : {}), ttlMs: this.#settings.ttlMs });
    } catch (error) {
      if (error.code === 'LEASE_HELD' || error.code === 'FENCED') {
        this.#drop(workflowId);
        return 'elsewhere';
      }
      return 'unavailable';
    }
    const pulled = held?.epoch === lease.epoch && held.pulled;
    this.#given.delete(workflowId);
    this.#held.set(workflowId, { epoch: lease.epoch, until: asked + lease.ttlMs, pulled });
    return pulled ? 'held' : 'pull';
  }

  /** Marks the server's events as pulled under the held lease: the run may go on here. */
  pulled(workflowId) {
    const held = this.#held.get(workflowId);
    if (held) held.pulled = true;
  }

  /** Gives the lease up (the run ended and its events were pushed); its epoch is kept for later pushes. */
  async release(workflowId) {
    const held = this.#held.get(workflowId);
    if (!held) return;
    this.#held.delete(workflowId);
    this.#given.set(workflowId, held.epoch);
    try {
      await this.#call(workflowId, '/release', { holder: this.#holder, epoch: held.epoch });
    } catch {
      // Offline, or taken over already: the lease expires on its own.
    }
  }

  /** Forgets the leases held, without giving them up (another engine of this device takes them on). */
  forget() {
    this.#held.clear();
  }

  /** Stops renewing, and gives up the leases still held. */
  stop() {
    clearInterval(this.#timer);
    return Promise.all([...this.#held.keys()].map((workflowId) => this.release(workflowId)));
  }

  #drop(workflowId) {
    this.#held.delete(workflowId);
    this.#given.delete(workflowId);
  }

  async #renewAll() {
    for (const [workflowId, held] of [...this.#held]) {
      const outcome = await this.take(workflowId);
      if (outcome === 'elsewhere' || (outcome === 'unavailable' && performance.now() >= held.until)) {
        this.#drop(workflowId);
        this.#onLost(workflowId);
      }
    }
  }

  async #call(workflowId, path, body) {
    const { url, token, namespace, fetch } = this.#settings;
    const response = await fetch(`${url}/v1/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/lease${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (!response.ok) throw new RunStoreError(typeof answer?.code === 'string' ? answer.code : 'BACKEND', String(answer?.message ?? response.status), { httpStatus: response.status });
    return answer;
  }
}
