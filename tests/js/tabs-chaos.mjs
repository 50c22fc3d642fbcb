// The multi-tab chaos run, shared by tests/js/tabs.test.mjs (bounded) and scripts/bench-tabs.sh
// (longer): writer pages append to workflows (single appends, and steps of two events with an
// outbox row and a timer) while the leader page is closed, reloaded or has its worker
// terminated at random intervals. Afterwards every acknowledged write must be stored exactly
// once, heads without gaps, no step partial, no call left pending.

import { endWorker } from './browser.mjs';

/** Runs in each writer page: opens the store and keeps one write in flight per own workflow. */
async function startWriter({ name, slot, slots, workflows, timeoutMs }) {
  const nonce = Math.random().toString(36).slice(2, 8);
  const stats = { inFlight: 0, errors: {} };
  window.stats = stats;
  window.stop = false;
  window.store = await window.runstore.RunStore.open(name, { persistence: 'opfs', requestTimeoutMs: timeoutMs });
  // The store marks when each phase of taking over ended (performance mark `runstore:lead`).
  const led = () => {
    const phases = performance.getEntriesByName('runstore:lead').at(-1)?.detail ?? {};
    console.debug(`runstore-leader ${Date.now()} ${JSON.stringify(phases)}`);
  };
  window.store.onLeaderChange((isLeader) => isLeader && led());
  if (window.store.isLeader) led();
  const track = async (promise) => {
    stats.inFlight++;
    try {
      return await promise;
    } finally {
      stats.inFlight--;
    }
  };
  let k = 0;
  const write = async (wf, head) => {
    const id = `${slot}.${nonce}.${k++}`;
    const now = Date.now();
    if (k % 3 !== 0) {
      await track(window.store.append(wf, [{ type: 'custom', name: 'one', recordedAt: now, data: { id } }], head));
      console.debug(`runstore-ack ${id} one ${Date.now()}`);
      return head + 1;
    }
    const events = ['step-a', 'step-b'].map((n) => ({ type: 'custom', name: n, recordedAt: now, data: { id } }));
    const row = { dispatchKey: id, workflowId: wf, ordinal: head + 1, activityType: 'act', input: new Uint8Array([1]), visibleAfter: now };
    await track(window.store.commit({
      operations: [
        { op: 'append', workflowId: wf, events, expectedSeq: head, outbox: [row] },
        { op: 'scheduleTimer', workflowId: wf, timerId: id, fireAt: now + 1e9 },
      ],
    }));
    console.debug(`runstore-ack ${id} step ${Date.now()}`);
    return head + 2;
  };
  const loop = async (wf) => {
    let head = null;
    while (!window.stop) {
      try {
        head = head ?? (await track(window.store.head(wf)));
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
  const outbox = (await all((page) => store.listOutbox(null, page))).map((r) => r.dispatchKey);
  const timers = (await all((page) => store.listTimers(page))).map((t) => t.timerId);
  const undecodable = await store.findUndecodableEvent();
  await store.close();
  return { events, gaps, outbox, timers, undecodable };
}

/**
 * Drives the run in `browser` (a playwright context) against the app at `url`; resolves to
 * { acked, problems, disruptions, handoffs (ms), errors, pendingLeft }.
 */
export async function runChaos(browser, url, options) {
  const { name = 'chaos', slots = 4, workflowCount = 50, minWrites = 2000, minDisruptions = 6, maxMs = 120_000, timeoutMs = 20_000, log = () => {} } = options;
  const workflows = Array.from({ length: workflowCount }, (_, i) => `wf-${i}`);
  const acked = new Map();
  const leaderSince = [];
  const pages = [];
  const startPage = async (slot) => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => log(`page error: ${error.message}`));
    // Acknowledgements and leadership reach the driver as console messages: they arrive
    // while the page lives, and a page that goes away cannot take them back.
    page.on('console', (message) => {
      const [tag, ...rest] = message.text().split(' ');
      if (tag === 'runstore-ack') acked.set(rest[0], { kind: rest[1], at: Number(rest[2]) });
      else if (tag === 'runstore-leader') leaderSince.push({ at: Number(rest[0]), phases: JSON.parse(rest[1] ?? '{}') });
    });
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
  const began = Date.now();
  while ((acked.size < minWrites || disruptions < minDisruptions) && Date.now() - began < maxMs) {
    await sleep(500 + Math.random() * 2500);
    const leader = await findLeader(pages);
    if (leader < 0) continue;
    const kind = ['close', 'reload', 'terminate'][disruptions % 3];
    const t0 = Date.now();
    if (kind === 'close') {
      await pages[leader].close();
      await startPage(leader);
    } else if (kind === 'reload') {
      await start(pages[leader], leader);
    } else {
      await endWorker(pages[leader], 'worker').catch(() => {});
    }
    disruptions++;
    handoffs.push({ t0, kind });
    log(`${kind} of page ${leader}; ${acked.size} writes acknowledged`);
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
  for (const page of pages) {
    for (const [code, n] of Object.entries(await page.evaluate(() => window.stats.errors))) errors[code] = (errors[code] ?? 0) + n;
  }
  for (const page of pages) await page.close();
  const checker = await browser.newPage();
  await checker.goto(url);
  await checker.waitForFunction(() => window.runstore !== undefined);
  const stored = await checker.evaluate(readBack, { name, workflows });
  await checker.close();
  return {
    acked: acked.size,
    problems: check(acked, stored),
    disruptions,
    ...handoffTimes(handoffs, leaderSince, acked),
    errors,
    pendingLeft,
  };
}

/**
 * Each hand-off's time from the disruption to the first write acknowledged after a new leader
 * took over (`handoffs`), and where it went (`phases`, ms each): until the new leader's tab got
 * the lock, until the previous worker let the files go, opening them, announcing the new
 * leader, and the first acknowledgement.
 */
function handoffTimes(starts, leaderSince, acked) {
  const ackTimes = [...acked.values()].map((a) => a.at).sort((a, b) => a - b);
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

/** Every acknowledged write stored exactly once, every stored write once, steps whole. */
function check(acked, { events, gaps, outbox, timers, undecodable }) {
  const problems = [...gaps.map((g) => `gap at ${g}`)];
  if (undecodable) problems.push(`undecodable event ${JSON.stringify(undecodable)}`);
  const seen = new Map();
  for (const [wf, seq, name, id] of events) {
    const entry = seen.get(id) ?? { names: [], wf, seqs: [] };
    entry.names.push(name);
    entry.seqs.push(seq);
    seen.set(id, entry);
  }
  const rows = new Set(outbox);
  const timerIds = new Set(timers);
  for (const [id, { names, seqs }] of seen) {
    const isStep = names[0] !== 'one';
    const whole = isStep
      ? names.join() === 'step-a,step-b' && seqs[1] === seqs[0] + 1 && rows.has(id) && timerIds.has(id)
      : names.length === 1;
    if (!whole) problems.push(`write ${id} stored as ${names.join()} at ${seqs.join()} (outbox ${rows.has(id)}, timer ${timerIds.has(id)})`);
  }
  for (const id of rows) if (!seen.has(id)) problems.push(`outbox row ${id} without its events`);
  for (const [id, { kind }] of acked) {
    if (!seen.has(id)) problems.push(`acknowledged ${kind} ${id} is missing`);
  }
  return problems;
}

/** p50, p95 and max of `values` (nulls dropped). */
export function percentiles(values) {
  const sorted = values.filter((v) => v !== null).sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
