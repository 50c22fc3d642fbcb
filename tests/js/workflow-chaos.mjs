// The workflow chaos run, in real Chromium: three tabs of one origin share a store on OPFS and
// each starts runstore/workflow's engine on it (tests/js/workflow-chaos-page.js). The driver
// starts workflows and sends their signals from random tabs (some starts and some signal ids
// sent twice, every call sent again from another tab until one answers), while the leader tab,
// whose engine runs the workflows, is killed every 0.5-3 s of its lead: closed, or its renderer
// crashed (CDP Page.crash: no unload, no last message). A new tab is opened for each one killed.
// Every step body calls the counting service (tests/js/workflow-chaos-service.mjs). When every
// workflow has completed, a fresh page reads the journals and the effect ledger back and
// tests/js/workflow-chaos-check.mjs holds them against the service's log and the kills.
//
// The package is the packed tarball as tests/app installs it (scripts/build-test-app.sh),
// served unbundled as ES modules beside the page, with an import map for its names; `patches`
// change a copy of it (the negative control), each by the exact text it replaces.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic } from './browser.mjs';
import { percentiles } from './tabs-chaos.mjs';
import { startService } from './workflow-chaos-service.mjs';
import { checkChaos } from './workflow-chaos-check.mjs';
import { CALL_LIMIT_MS, ChaosTabs, sleep, withLimit } from './workflow-chaos-tabs.mjs';

export const INSTALLED = fileURLToPath(new URL('../app/node_modules/runstore/', import.meta.url));
const PAGE = fileURLToPath(new URL('./workflow-chaos-page.js', import.meta.url));
const HTML = `<!doctype html>
<meta charset="utf-8" />
<title>workflow chaos</title>
<script type="importmap">{ "imports": { "runstore": "/runstore/js/index.js", "runstore/workflow": "/runstore/js/workflow.js" } }</script>
<script type="module" src="/page.js"></script>
`;
const TABS = 3;

/**
 * A folder with the page and a copy of the package at `runstore/`, `patches` applied:
 * `[file under js/, from, to]`. A patch whose text is not there once throws.
 */
export function sitePackage(patches = []) {
  if (!existsSync(join(INSTALLED, 'package.json'))) throw new Error(`no package at ${INSTALLED}: run scripts/build-test-app.sh`);
  const root = mkdtempSync(join(tmpdir(), 'runstore-wf-chaos-'));
  cpSync(INSTALLED, join(root, 'runstore'), { recursive: true });
  cpSync(PAGE, join(root, 'page.js'));
  writeFileSync(join(root, 'index.html'), HTML);
  for (const [file, from, to] of patches) {
    const path = join(root, 'runstore', 'js', file);
    const source = readFileSync(path, 'utf8');
    if (source.split(from).length !== 2) throw new Error(`js/${file} no longer holds, once, the text this patch replaces:\n${from}`);
    writeFileSync(path, source.replace(from, () => to));
  }
  return root;
}

/**
 * Runs the chaos: `workflows` started over `spreadMs`, then kills go on until all completed
 * (at most `maxMs` in all), each leader killed after a lead of `leadMs` (`[least, most]`).
 * Resolves to the report: counts, kills, hand-off and resume times, the engines' reported
 * errors, and `problems` (none when the engine keeps its word).
 */
export async function runWorkflowChaos({ patches = [], workflows = 16, spreadMs = 20_000, maxMs = 240_000, leadMs = [500, 3_000], log = () => {} } = {}) {
  const root = sitePackage(patches);
  const service = await startService();
  const site = await serveStatic(root);
  const browser = await launchChromium();
  try {
    const urlOf = (tab) => `${site.url}?tab=${tab}&store=wf-chaos&service=${encodeURIComponent(service.url)}`;
    const began = Date.now();
    const tabs = new ChaosTabs(browser, urlOf, began + maxMs);
    const plan = planOf(workflows);
    for (let i = 0; i < TABS; i++) await tabs.open();
    log(`${TABS} tabs open; ${workflows} workflows over ${spreadMs} ms`);
    const sent = { starts: 0, sends: 0, duplicates: 0 };
    const done = new Set();
    let outcome = null;
    Promise.all([...plan.map((w, i) => drive(tabs, w, (i * spreadMs) / workflows, sent)), untilCompleted(tabs, plan, done)]).then(
      () => (outcome = true),
      (error) => (outcome = error),
    );
    const { kills, handoffs } = await killLeaders(tabs, () => outcome !== null, { began, maxMs, leadMs, log: (line) => log(`${line}; ${done.size}/${workflows} completed`) });
    const durationMs = Date.now() - began;

    await tabs.closeAll();
    const reader = await browser.newPage();
    await reader.goto(urlOf('reader'));
    const read = reader.evaluate((ids) => window.chaos.readBack(ids), plan.map((w) => w.id));
    const stored = await withLimit(read, 120_000).catch((error) => {
      throw new Error(`the store could not be read back after the run: ${error.message}`);
    });

    const { problems, counts } = checkChaos({ plan, calls: service.calls, kills, stored });
    if (outcome !== true) problems.unshift(`the run did not finish in ${maxMs} ms: ${done.size} of ${workflows} workflows completed (${outcome?.message ?? 'time is up'})`);
    for (const call of tabs.hung) problems.push(`${call} did not settle in ${CALL_LIMIT_MS} ms`);
    return {
      ...counts,
      kills: kills.length,
      closed: kills.filter((k) => k.how === 'close').length,
      crashed: kills.filter((k) => k.how === 'crash').length,
      ...sent,
      handoffs: percentiles(handoffs),
      resumes: percentiles(resumeTimes(kills, service.calls)),
      killGaps: percentiles(counts.killGaps),
      engineErrors: tabs.engineErrors,
      callErrors: tabs.callErrors,
      durationMs,
      problems,
    };
  } finally {
    await browser.close();
    await site.close();
    await service.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The workflows: ids, inputs, and the signals each must get (an approval, then 1 to 3 items). */
function planOf(workflows) {
  return Array.from({ length: workflows }, (_, i) => {
    const id = `order-${i}`;
    const input = { sleepMs: 100 + Math.floor(Math.random() * 500), items: 1 + (i % 3) };
    const signals = [{ signalId: `${id}/approve`, name: 'approve', payload: { by: `approver-${i}` } }];
    for (let k = 0; k < input.items; k++) signals.push({ signalId: `${id}/item-${k}`, name: 'item', payload: { k, of: id } });
    return { id, input, signals };
  });
}

/** After `delayMs`, starts a workflow (a fifth of them twice), then sends its signals at random moments, some twice. */
async function drive(tabs, { id, input, signals }, delayMs, sent) {
  await sleep(delayMs);
  const start = () => tabs.onSome(({ id, input }) => window.chaos.start(id, input), { id, input }).then(() => sent.starts++);
  await Promise.all(Math.random() < 0.2 ? [start(), start()] : [start()]);
  const send = async ({ signalId, name, payload }) => {
    const { duplicate } = await tabs.onSome(([...args]) => window.chaos.signal(...args), [id, name, payload, signalId]);
    sent.sends++;
    if (duplicate) sent.duplicates++;
  };
  await Promise.all(
    signals.map(async (signal) => {
      await sleep(Math.random() * 2_000);
      await send(signal);
      if (Math.random() < 0.3) {
        await sleep(Math.random() * 1_500);
        await send(signal);
      }
    }),
  );
}

/** Polls the workflows' statuses from random tabs until all completed (`done` holds those that have). */
async function untilCompleted(tabs, plan, done) {
  while (done.size < plan.length) {
    const open = plan.map((w) => w.id).filter((id) => !done.has(id));
    const statuses = await tabs.onSome((ids) => window.chaos.statuses(ids), open);
    open.forEach((id, i) => statuses[i] === 'completed' && done.add(id));
    await sleep(500);
  }
}

/**
 * Kills the leader `leadMs` after it took the lead, closed and crashed in turn, and opens a
 * tab for each one killed, until `over()` or the time is up. Resolves to the kills
 * (`{ tab, at, how }`) and each hand-off's time to the next leader.
 */
async function killLeaders(tabs, over, { began, maxMs, leadMs: [least, most], log }) {
  const kills = [];
  const handoffs = [];
  // Closed and crashed in turn, from a random first: a short run still has both (drawn at
  // random, 8 kills were all closes once in a while).
  const first = Math.random() < 0.5 ? 0 : 1;
  while (!over() && Date.now() - began < maxMs) {
    const leader = await tabs.leader();
    if (!leader) {
      await sleep(50);
      continue;
    }
    const due = Date.now() + least + Math.random() * (most - least);
    while (!over() && Date.now() < due) await sleep(50);
    if (over()) break;
    const how = (kills.length + first) % 2 === 0 ? 'close' : 'crash';
    const at = Date.now();
    kills.push({ tab: leader.id, at, how });
    await tabs.kill(leader, how);
    const replacement = tabs.open();
    handoffs.push((await tabs.untilLeader()) ? Date.now() - at : null);
    // Past the run's time no tab opens: the run ends, and the check says what was left.
    await replacement.catch(() => {});
    log(`${how} of ${leader.id} at ${at - began} ms`);
  }
  return { kills, handoffs };
}

/** One line of the run's figures. */
export function summary(report) {
  const p = (q) => (q.n ? `p50 ${q.p50} / p95 ${q.p95} / max ${q.max} ms` : 'none');
  return [
    `${report.completed} of ${report.workflows} workflows and ${report.children} children completed, ${report.steps} steps, ${report.calls} service calls, in ${(report.durationMs / 1000).toFixed(1)} s`,
    `${report.kills} leader kills (${report.closed} closed, ${report.crashed} crashed); next leader after ${p(report.handoffs)}; first step call after ${p(report.resumes)}`,
    `${report.reruns} bodies ran again after a kill (the kill ${p(report.killGaps)} after the service answered), ${report.retries} retried after a failure`,
    `${report.signals} signals, sent ${report.sends} times (${report.duplicates} answered as duplicates); ${report.starts} starts; ${report.timers} sleeps`,
    `engine errors ${JSON.stringify(report.engineErrors)}; driver calls failed ${JSON.stringify(report.callErrors)}; ${report.problems.length} problems`,
  ].join('\n');
}

/** For each kill, the time until a body of another tab next called the service. */
function resumeTimes(kills, calls) {
  return kills.map(({ tab, at }) => {
    const first = calls.find((c) => c.at > at && c.tab !== tab);
    return first ? first.at - at : null;
  });
}

