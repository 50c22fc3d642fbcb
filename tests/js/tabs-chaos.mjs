// The multi-tab chaos run, shared by tests/js/tabs.test.mjs (bounded) and scripts/bench-tabs.sh
// (longer): writer pages append to workflows (single appends, steps of two events with an
// outbox row and a timer), put and delete artifacts and purge closed workflows, changing each
// call's arguments right after making it, while the leader page is closed, reloaded or has its
// worker ended at random intervals, and stores are closed and opened again in random pages.
// Every page's subscribers note each change notice. Afterwards: every acknowledged write is
// stored exactly once with the data it had when called, heads without gaps, no step partial,
// every delete answered what it did, every acknowledged write announced once to every page
// that lived through it, no call left pending.

/** Runs in each writer page: opens the store and keeps one write in flight per own workflow. */
async function startWriter({ name, slot, slots, workflows, timeoutMs }) {
  const nonce = Math.random().toString(36).slice(2, 8);
  const stats = { inFlight: 0, errors: {}, calls: 0 };
  window.stats = stats;
  window.stop = false;
  const log = (...parts) => console.debug(parts.join(' '));
  // The store marks when each phase of taking over ended (performance mark `runstore:lead`).
  const led = () => {
    const phases = performance.getEntriesByName('runstore:lead').at(-1)?.detail ?? {};
    log('runstore-leader', Date.now(), JSON.stringify(phases));
  };
  let opened = 0;
  /** Opens the store as a new listener: each opening's subscriber notes what it hears. */
  const open = async () => {
    const store = await window.runstore.RunStore.open(name, { persistence: 'opfs', requestTimeoutMs: timeoutMs });
    const listener = `${slot}.${nonce}.${opened++}`;
    store.subscribe(null, (change) => log('runstore-heard', listener, change.requestId, JSON.stringify(change.heads), change.areas.join(',')));
    log('runstore-listening', listener, Date.now());
    store.onLeaderChange((isLeader) => isLeader && led());
    if (store.isLeader) led();
    return store;
  };
  window.store = await open();
  /** Closes the store (calls in flight settle) and opens it again, as an app that closes it at any moment. */
  window.reopen = async () => {
    const closing = window.store;
    window.store = null;
    const listener = `${slot}.${nonce}.${opened - 1}`;
    log('runstore-closing', listener, Date.now());
    await closing.close();
    window.store = await open();
  };
  /** The store, once it is open again after a close (`reopen`). */
  const ready = async () => {
    while (!window.store) await new Promise((resolve) => setTimeout(resolve, 20));
    return window.store;
  };
  /** Makes the call now (on the store open now), counting it in flight until it settles. */
  const track = async (call) => {
    stats.inFlight++;
    stats.calls++;
    try {
      return await call(window.store ?? (await ready()));
    } finally {
      stats.inFlight--;
    }
  };
  const ack = (id, kind, calledAt, detail = '') => log('runstore-ack', id, kind, Date.now(), calledAt, detail);
  let k = 0;
  const write = async (wf, head) => {
    // The call is made as soon as its arguments exist, then they change: wait for a store first.
    await ready();
    const id = `${slot}.${nonce}.${k++}`;
    const now = Date.now();
    const kind = k % 8;
    if (kind < 4) {
      const event = { type: 'custom', name: 'one', recordedAt: now, data: { id } };
      const call = track((s) => s.append(wf, [event], head));
      // The caller changes its objects at once: nothing written, sent or sent again may carry it.
      event.name = 'changed';
      event.data.id = 'changed';
      const newHead = await call;
      ack(id, 'one', now, `${wf}:${newHead}`);
      return newHead;
    }
    if (kind < 6) {
      const events = ['step-a', 'step-b'].map((n) => ({ type: 'custom', name: n, recordedAt: now, data: { id } }));
      const row = { dispatchKey: id, workflowId: wf, ordinal: head + 1, activityType: 'act', input: new Uint8Array([7]), visibleAfter: now };
      const step = {
        requestId: id,
        operations: [
          { op: 'append', workflowId: wf, events, expectedSeq: head, outbox: [row] },
          { op: 'scheduleTimer', workflowId: wf, timerId: id, fireAt: now + 1e9 },
        ],
      };
      const call = track((s) => s.commit(step));
      row.input[0] = 99;
      row.dispatchKey = `changed-${id}`;
      events[1].data.id = 'changed';
      step.operations.pop();
      await call;
      ack(id, 'step', now, `${wf}:${head + 2}`);
      return head + 2;
    }
    if (kind === 6) {
      const artifact = { scope: 'chaos', mediaType: 'text/plain', name: id, bytes: new TextEncoder().encode(id) };
      const stored = await track((s) => s.putArtifact(artifact, now));
      artifact.bytes[0] = 0;
      ack(id, 'put', now, stored.artifactId);
      const calledAt = Date.now();
      const deleted = await track((s) => s.deleteArtifact('chaos', stored.artifactId));
      ack(id, 'delete', calledAt, String(deleted));
      return head;
    }
    const closed = `closed-${id}`;
    log('runstore-call', 'closed', id);
    await track((s) => s.append(closed, [{ type: 'started', workflowType: 'chaos', runId: id, recordedAt: 1 }, { type: 'completed', recordedAt: 2 }], 0));
    ack(id, 'closed', now, closed);
    const calledAt = Date.now();
    log('runstore-call', 'purge', id);
    const counts = await track((s) => s.purgeWorkflows(10, 2));
    ack(id, 'purge', calledAt, String(counts.workflows));
    return head;
  };
  const loop = async (wf) => {
    let head = null;
    while (!window.stop) {
      try {
        head = head ?? (await track((s) => s.head(wf)));
        head = await write(wf, head);
      } catch (error) {
        stats.errors[error.code] = (stats.errors[error.code] ?? 0) + 1;
        head = null;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  workflows.filter((_, i) => i % slots === slot).forEach(loop);
}

/** Runs in a page after the writers stopped: reads back everything the check needs. */
async function readBack({ name, workflows }) {
  const store = await window.runstore.RunStore.open(name, { persistence: 'opfs', requestTimeoutMs: 30_000 });
  const all = async (list) => {
    const items = [];
    for (let cursor = null; ; ) {
      const page = await list({ limit: 1000, cursor });
      items.push(...page.items);
      if (page.nextCursor === null) return items;
      cursor = page.nextCursor;
    }
  };
  const events = [];
  const gaps = [];
  for (const wf of workflows) {
    const history = await all((page) => store.readHistory(wf, page));
    history.forEach((e, i) => {
      if (e.seq !== i + 1) gaps.push(`${wf}@${i + 1}`);
      events.push([wf, e.seq, e.name, e.data.id]);
    });
  }
  const outbox = (await all((page) => store.listOutbox(null, page))).map((r) => [r.dispatchKey, r.input[0]]);
  const timers = (await all((page) => store.listTimers(page))).map((t) => t.timerId);
  const artifacts = (await all((page) => store.listArtifacts('chaos', page))).map((a) => a.artifactId);
  const workflowIds = (await all((page) => store.listWorkflowIds(page))).filter((id) => id.startsWith('closed-'));
  const undecodable = await store.findUndecodableEvent();
  await store.close();
  return { events, gaps, outbox, timers, artifacts, workflowIds, undecodable };
}

/** Makes a page keep the workers it starts in `window.workers`, so that a test can end them as a crash would. */
export function trackWorkers() {
  window.workers = [];
  const Started = Worker;
  window.Worker = class extends Started {
    constructor(...args) {
      super(...args);
      window.workers.push(this);
    }
  };
}

/**
 * Drives the run in `browser` (a playwright context) against the app at `url`; resolves to
 * the report: { calls, acked, handoffs (ms), disruptions, lost, doubled, wrongData,
 * unannounced, pending, problems, errors, phases }.
 */
export async function runChaos(browser, url, options) {
  const { name = 'chaos', slots = 4, workflowCount = 50, minWrites = 2000, minDisruptions = 6, maxMs = 120_000, timeoutMs = 20_000, log = () => {} } = options;
  const workflows = Array.from({ length: workflowCount }, (_, i) => `wf-${i}`);
  const seen = { acked: [], called: { closed: 0, purge: 0 }, leaderSince: [], heard: new Map(), listening: new Map() };
  /** A page closed or reloaded: its listeners heard nothing after `at`. */
  const gone = (slot, at) => {
    for (const [listener, span] of seen.listening) if (listener.startsWith(`${slot}.`) && span.until === Infinity) span.until = at;
  };
  const pages = [];
  const startPage = async (slot) => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => log(`page error: ${error.message}`));
    // Acknowledgements, notices and leadership reach the driver as console messages: they
    // arrive while the page lives, and a page that goes away cannot take them back.
    page.on('console', (message) => note(seen, message.text()));
    await start(page, slot);
    pages[slot] = page;
  };
  const start = async (page, slot) => {
    await page.goto(url);
    await page.waitForFunction(() => window.runstore !== undefined);
    await page.evaluate(startWriter, { name, slot, slots, workflows, timeoutMs });
  };
  for (let slot = 0; slot < slots; slot++) await startPage(slot);

  const handoffs = [];
  let disruptions = 0;
  let closes = 0;
  /** Calls made by pages gone since (their counts go with them). */
  let callsGone = 0;
  const began = Date.now();
  while ((seen.acked.length < minWrites || disruptions < minDisruptions) && Date.now() - began < maxMs) {
    await sleep(500 + Math.random() * 2500);
    // Now and then a store is closed and opened again in any page, writes in flight.
    if (Math.random() < 0.5) {
      const slot = Math.floor(Math.random() * slots);
      pages[slot].evaluate(() => window.store && window.reopen()).catch(() => {});
      closes++;
    }
    const leader = await findLeader(pages);
    if (leader < 0) continue;
    const kind = ['close', 'reload', 'terminate'][disruptions % 3];
    const t0 = Date.now();
    if (kind !== 'terminate') {
      gone(leader, t0);
      callsGone += await pages[leader].evaluate(() => window.stats.calls).catch(() => 0);
    }
    if (kind === 'close') {
      await pages[leader].close();
      await startPage(leader);
    } else if (kind === 'reload') {
      await start(pages[leader], leader);
    } else {
      // From the page, at once, whatever the worker runs: as a crashed worker. The test app
      // keeps the workers its page started (tests/app/src/main.js), in every engine.
      await pages[leader].evaluate(() => window.runstore.workers.forEach((worker) => worker.ended || worker.end())).catch(() => {});
    }
    disruptions++;
    handoffs.push({ t0, kind });
    log(`${kind} of page ${leader}; ${seen.acked.length} writes acknowledged`);
  }

  for (const page of pages) await page.evaluate(() => (window.stop = true));
  const pendingLeft = [];
  for (const page of pages) {
    const left = await page
      .waitForFunction(() => window.stats.inFlight === 0, null, { timeout: timeoutMs + 10_000 })
      .then(() => 0, () => page.evaluate(() => window.stats.inFlight));
    pendingLeft.push(left);
  }
  const errors = {};
  let calls = callsGone;
  for (const page of pages) {
    const stats = await page.evaluate(() => window.stats);
    calls += stats.calls;
    for (const [code, n] of Object.entries(stats.errors)) errors[code] = (errors[code] ?? 0) + n;
  }
  // The last notices of the last commits reach every page.
  await sleep(1_000);
  const ended = Date.now();
  for (const page of pages) await page.close();
  const checker = await browser.newPage();
  await checker.goto(url);
  await checker.waitForFunction(() => window.runstore !== undefined);
  const stored = await checker.evaluate(readBack, { name, workflows });
  await checker.close();
  const found = check(seen, stored, ended);
  return {
    calls,
    acked: seen.acked.length,
    disruptions,
    closes,
    ...found.counts,
    pending: pendingLeft.reduce((a, b) => a + b, 0),
    pendingLeft,
    problems: found.problems,
    ...handoffTimes(handoffs, seen.leaderSince, seen.acked),
    errors,
  };
}

/** Notes one console message of a writer page. */
function note(seen, text) {
  const [tag, ...rest] = text.split(' ');
  if (tag === 'runstore-ack') {
    const [id, kind, at, calledAt, detail] = rest;
    seen.acked.push({ id, kind, at: Number(at), calledAt: Number(calledAt), detail });
  } else if (tag === 'runstore-call') {
    seen.called[rest[0]]++;
  } else if (tag === 'runstore-heard') {
    const [listener, requestId, heads, areas] = rest;
    const heard = seen.heard.get(listener) ?? [];
    heard.push({ requestId, heads: JSON.parse(heads), areas: areas.split(',') });
    seen.heard.set(listener, heard);
  } else if (tag === 'runstore-listening') {
    seen.listening.set(rest[0], { from: Number(rest[1]), until: Infinity });
  } else if (tag === 'runstore-closing') {
    const listener = seen.listening.get(rest[0]);
    if (listener) listener.until = Number(rest[1]);
  } else if (tag === 'runstore-leader') {
    seen.leaderSince.push({ at: Number(rest[0]), phases: JSON.parse(rest[1] ?? '{}') });
  }
}

/**
 * Each hand-off's time from the disruption to the first write acknowledged after a new leader
 * took over (`handoffs`), and where it went (`phases`, ms each): until the new leader's tab got
 * the lock, until the previous worker let the files go, opening them, announcing the new
 * leader, and the first acknowledgement.
 */
function handoffTimes(starts, leaderSince, acked) {
  const ackTimes = acked.map((a) => a.at).sort((a, b) => a - b);
  const handoffs = [];
  const phases = [];
  for (const { t0, kind } of starts) {
    const led = leaderSince.filter((l) => l.at >= t0).sort((a, b) => a.at - b.at)[0];
    const first = led === undefined ? undefined : ackTimes.find((t) => t >= led.at);
    handoffs.push(first === undefined ? null : first - t0);
    const p = led?.phases;
    if (first === undefined || !p?.lockGranted) continue;
    phases.push({
      lock: p.lockGranted - t0,
      wasm: Math.max(0, p.wasmReady - p.lockGranted),
      files: p.poolFree - Math.max(p.lockGranted, p.wasmReady),
      open: p.opened - p.poolFree,
      announce: p.announced - p.opened,
      firstAck: first - p.announced,
      attempts: p.attempts,
      kind,
    });
  }
  return { handoffs, phases };
}

async function findLeader(pages) {
  for (let i = 0; i < pages.length; i++) {
    if (await pages[i].evaluate(() => window.store?.isLeader === true).catch(() => false)) return i;
  }
  return -1;
}

/**
 * How long after a write's answer every tab hears of it: its leader announces the changes of
 * 10 ms at once (js/serve.js), and a page that goes away before that does not hear them. The
 * rest is room for a timer that fires late on a loaded machine.
 */
const ANNOUNCED_WITHIN_MS = 250;

/**
 * Every acknowledged write stored exactly once with its call-time data, every stored write
 * once, steps whole, deletes and purges answered what they did, every acknowledged write
 * announced once to every listener that lived through it.
 */
function check(seen, stored, ended) {
  const problems = [];
  const counts = { lost: 0, doubled: 0, wrongData: 0, unannounced: 0 };
  const problem = (count, text) => {
    counts[count]++;
    problems.push(text);
  };
  for (const gap of stored.gaps) problem('lost', `gap at ${gap}`);
  if (stored.undecodable) problem('wrongData', `undecodable event ${JSON.stringify(stored.undecodable)}`);
  const byId = new Map();
  for (const [wf, seq, name, id] of stored.events) {
    const entry = byId.get(id) ?? { names: [], wf, seqs: [] };
    entry.names.push(name);
    entry.seqs.push(seq);
    byId.set(id, entry);
  }
  const rows = new Map(stored.outbox);
  const timers = new Set(stored.timers);
  for (const [id, { names, seqs }] of byId) {
    if (id === 'changed' || names.includes('changed')) {
      problem('wrongData', `a write stored as changed after its call: ${names.join()} at ${seqs.join()}`);
      continue;
    }
    const isStep = names[0] !== 'one';
    const whole = isStep ? names.join() === 'step-a,step-b' && seqs[1] === seqs[0] + 1 && rows.has(id) && timers.has(id) : names.length === 1;
    if (names.length > (isStep ? 2 : 1)) problem('doubled', `write ${id} stored ${names.length} times`);
    else if (!whole) problem('wrongData', `write ${id} stored as ${names.join()} at ${seqs.join()} (outbox ${rows.has(id)}, timer ${timers.has(id)})`);
    else if (isStep && rows.get(id) !== 7) problem('wrongData', `step ${id}'s row holds ${rows.get(id)}`);
  }
  for (const [key] of stored.outbox) if (!byId.has(key)) problem('wrongData', `outbox row ${key} without its events`);
  const artifacts = new Set(stored.artifacts);
  let purged = 0;
  for (const { id, kind, detail } of seen.acked) {
    if ((kind === 'one' || kind === 'step') && !byId.has(id)) problem('lost', `acknowledged ${kind} ${id} is missing`);
    if (kind === 'delete' && detail !== 'true') problem('doubled', `the delete of ${id}'s artifact answered ${detail}`);
    if (kind === 'put' && artifacts.has(detail) && seen.acked.some((a) => a.id === id && a.kind === 'delete')) problem('lost', `the deleted artifact of ${id} is there`);
    if (kind === 'purge') purged += Number(detail);
  }
  // The closed workflows gone are those the purges deleted: at least what the acknowledged ones
  // answered, at most that plus the limit (2) of each purge not acknowledged. A purge applied
  // twice would delete more than it answered.
  const remaining = stored.workflowIds.length;
  const ackedPurges = seen.acked.filter((a) => a.kind === 'purge').length;
  const goneAtLeast = seen.acked.filter((a) => a.kind === 'closed').length - remaining;
  const goneAtMost = seen.called.closed - remaining;
  if (goneAtMost < purged) problem('lost', `purges answered ${purged} workflows, at most ${goneAtMost} are gone`);
  if (goneAtLeast > purged + 2 * (seen.called.purge - ackedPurges)) problem('doubled', `purges answered ${purged} workflows, at least ${goneAtLeast} are gone`);
  // Announced once to every listener that lived through the write, each request id once.
  for (const [listener, heard] of seen.heard) {
    const ids = heard.map((h) => h.requestId).filter((id) => id !== 'null');
    if (new Set(ids).size !== ids.length) problem('doubled', `listener ${listener} heard a request id twice`);
  }
  for (const [listener, { from, until }] of seen.listening) {
    const heard = seen.heard.get(listener) ?? [];
    const heads = new Set(heard.flatMap((h) => Object.entries(h.heads).map(([wf, head]) => `${wf}:${head}`)));
    const ids = new Set(heard.map((h) => h.requestId));
    const artifactNotices = heard.filter((h) => h.areas.includes('artifacts')).length;
    let artifactWrites = 0;
    for (const { id, kind, calledAt, at, detail } of seen.acked) {
      if (calledAt < from || at > Math.min(until - ANNOUNCED_WITHIN_MS, ended - 1_000)) continue;
      if (kind === 'put' || kind === 'delete') artifactWrites++;
      else if (kind === 'one' && !heads.has(detail)) problem('unannounced', `${listener} did not hear append ${id} (${detail})`);
      else if (kind === 'step' && !ids.has(id)) problem('unannounced', `${listener} did not hear step ${id}`);
    }
    if (artifactNotices < artifactWrites) problem('unannounced', `${listener} heard ${artifactNotices} of ${artifactWrites} artifact writes`);
  }
  return { counts, problems };
}

/** p50, p95 and max of `values` (nulls dropped). */
export function percentiles(values) {
  const sorted = values.filter((v) => v !== null).sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
