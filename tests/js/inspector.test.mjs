// runstore/inspector as an app mounts it: the packed package in the test app (tests/app), in
// the engine RUNSTORE_ENGINE names, its stores on RUNSTORE_MEDIUM. The element is mounted on a
// store whose workflows runstore/workflow runs (tests/app/src/inspector-page.js); each test
// acts as a user (clicks, real key presses) and checks what the element shows against what the
// store holds, and what an action changed in the store. Then runstore/core (in the page and in
// an app's own worker), a store of 100,000 workflows (first paint and scroll, timed), and the
// module imported in Node, where there is no DOM.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ENGINE, useTestApp } from './browser.mjs';
import { countIn, openInspectorPage, textIn, waitCount } from './inspector-helpers.mjs';

const app = useTestApp();
const title = (text) => `${text} (${ENGINE})`;
const STORE = 'inspector-live';
/** The leader tab (its engine runs the workflows) and a second tab (a follower). */
let leader;
let follower;
const problems = [];

const openApp = () => openInspectorPage(app, problems);

/** Mounts the inspector in `page` (see inspector-page.js `mount`). */
const mount = (page, options) => page.evaluate(async (options) => (await window.inspectorPage()).mount(options), options);

/** The run's events as the store has them: their names, in order. */
const storedEvents = (page, id) =>
  page.evaluate(async (id) => (await window.inspected.store.readHistory(id)).items.map((e) => (e.type === 'custom' ? e.name : e.type)), id);

after(() => {
  assert.deepEqual(problems, []);
});

test(title('shows the workflows its engine runs and a run as a timeline of its steps, retries, timer and wait'), async () => {
  leader = await openApp();
  const { isLeader } = await mount(leader, { name: STORE, count: 3 });
  assert.equal(isLeader, true);
  // Each charges (the first attempt fails: a retry), sleeps, then waits for its approval.
  await leader.waitForFunction(
    () => document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('.row[data-status="running"]').length === 3 &&
      [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('.row')].every((r) => r.textContent.includes('waits: wait approve')),
    undefined,
    { timeout: 20_000 },
  );
  assert.match(await textIn(leader, '[data-count=""]'), /^3$/);
  assert.match(await textIn(leader, '[data-count="running"]'), /^3$/);
  await leader.click('runstore-inspector .row[data-workflow-id="order-1"]');
  await waitCount(leader, '[data-run-id="order-1"]', 1);
  await waitCount(leader, '.span-row[data-span="wait approve"][data-span-status="waiting"]', 1);
  // The journal in order, event for event as the store has it.
  const shown = await leader.evaluate(() => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('[data-event]')].map((r) => r.dataset.event));
  assert.deepEqual(shown, await storedEvents(leader, 'order-1'));
  assert.deepEqual(shown, ['started', 'step', 'stepRetry', 'stepAttempt', 'stepDone', 'sleep', 'timerFired', 'wait']);
  // The charge as one span of two attempts (the first failed) with the wait for the retry between.
  assert.equal(await countIn(leader, '.span-row[data-span="step charge"] .bar.attempt.failed'), 1);
  assert.equal(await countIn(leader, '.span-row[data-span="step charge"] .bar.backoff'), 1);
  assert.equal(await countIn(leader, '.span-row[data-span="step charge"] .bar.attempt.done'), 1);
  assert.equal(await countIn(leader, '.span-row[data-span="sleep cool-off"][data-span-status="done"]'), 1);
  assert.match(await textIn(leader, '[data-step="charge"]'), /done.*2 · 1 retried.*completed/s, 'the step, its attempts and its ledger record');
  assert.match(await textIn(leader, '.ev[data-event="stepRetry"]'), /charge attempt 1 failed: the card network is busy/);
  // The search box: an id prefix, then a search attribute, then nothing.
  const search = (text) =>
    leader.evaluate((text) => {
      const input = document.querySelector('runstore-inspector').shadowRoot.querySelector('input[name="text"]');
      input.value = text;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }, text);
  await search('order-2');
  await waitCount(leader, '.row[data-workflow-id]', 1);
  await leader.waitForFunction(() => /^1 workflow with an id starting order-2 \(3 read\)$/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('.line').textContent));
  await search('steps>=1 has:waiting');
  await waitCount(leader, '.row[data-workflow-id]', 3);
  await search('steps>=5');
  await waitCount(leader, '.row[data-workflow-id]', 0);
  await search('');
  await waitCount(leader, '.row[data-workflow-id]', 3);
});

test(title('a follower tab shows the same store, and both follow a commit of the other live'), async () => {
  follower = await openApp();
  const { isLeader } = await mount(follower, { name: STORE });
  assert.equal(isLeader, false);
  await waitCount(follower, '.row[data-workflow-id]', 3);
  // Started in the follower tab, run by the leader's engine: both inspectors show it as it goes.
  await follower.evaluate(async () => (await window.inspectorPage()).start('order-new', 7));
  const waiting = (page) =>
    page.waitForFunction(
      () => document.querySelector('runstore-inspector').shadowRoot.querySelector('.row[data-workflow-id="order-new"]')?.textContent.includes('waits: wait approve'),
      undefined,
      { timeout: 20_000 },
    );
  await waiting(follower);
  await leader.bringToFront();
  await waiting(leader);
  // Every commit's notice reached both tabs' Changes view.
  const heard = (page) => page.evaluate(() => Number(document.querySelector('runstore-inspector').shadowRoot.querySelector('[data-changes-count]').textContent));
  assert.ok((await heard(leader)) >= 5, `${await heard(leader)} notices in the leader tab`);
  assert.ok((await heard(follower)) >= 5, `${await heard(follower)} notices in the follower tab`);
});

/** Opens the dialog of the action button `selector` in the page's inspector; resolves to its text. */
async function openDialog(page, selector) {
  await page.waitForSelector(`runstore-inspector ${selector}`);
  await page.click(`runstore-inspector ${selector}`);
  await page.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog')?.open === true);
  return page.evaluate(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog').textContent);
}

/** Clicks the dialog's OK and waits for it to close; a failure the dialog shows fails the test. */
async function confirmDialog(page) {
  await page.click('runstore-inspector dialog button[value="ok"]');
  await page.waitForFunction(() => {
    const dialog = document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog');
    return !dialog.open || dialog.querySelector('.error').textContent;
  });
  const error = await page.evaluate(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog .error').textContent);
  assert.equal(error, '', 'the action failed');
}

const dialogOpen = (page) => page.evaluate(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog').open);

test(title('signal, cancel and run again ask first and say what they will do; declined, nothing changes; confirmed, the engine does it'), async () => {
  const page = follower;
  await page.click('runstore-inspector .row[data-workflow-id="order-0"]');
  await waitCount(page, '[data-action="cancel"][data-arg="order-0"]', 1);
  const before = await storedEvents(page, 'order-0');
  // Declined: the dialog goes, the workflow is as it was.
  assert.match(await openDialog(page, '[data-action="cancel"][data-arg="order-0"]'), /order-0.*engine\.cancel.*CANCELLED/s);
  await page.click('runstore-inspector dialog button[value="cancel"]');
  assert.equal(await dialogOpen(page), false);
  // Confirmed, from the follower tab: the leader's engine records the signal and the run ends.
  const text = await openDialog(page, '[data-action="signal"][data-arg="order-0"]');
  assert.match(text, /order-0.*engine\.signal.*waitForSignal/s);
  await page.evaluate(() => {
    const dialog = document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog');
    dialog.querySelector('[name="name"]').value = 'approve';
    dialog.querySelector('[name="payload"]').value = '{"by": "the inspector"}';
  });
  await confirmDialog(page);
  assert.match(await textIn(page, '.toast'), /Signal approve sent to order-0/);
  await page.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('.row[data-workflow-id="order-0"]')?.dataset.status === 'completed', undefined, { timeout: 20_000 });
  const after = await storedEvents(page, 'order-0');
  assert.deepEqual(after.slice(0, before.length), before);
  assert.deepEqual(after.slice(before.length), ['signal', 'step', 'stepDone', 'completed'], 'the signal, the shipping step, completed; no cancellation');
  const result = await page.evaluate(() => window.inspected.engine.result('order-0'));
  assert.equal(result.approvedBy, 'the inspector');
  // Its artifact, stored with its last step, shows with its text.
  await waitCount(page, '[data-artifact="label.txt"]', 1);
  assert.match(await textIn(page, '[data-artifact="label.txt"]'), /ship 100 to the inspector/);
  // Cancelled, confirmed; then run again, after a dialog too: a new run under the same id.
  await page.click('runstore-inspector .row[data-workflow-id="order-2"]');
  await waitCount(page, '[data-action="cancel"][data-arg="order-2"]', 1);
  await openDialog(page, '[data-action="cancel"][data-arg="order-2"]');
  await confirmDialog(page);
  await page.waitForFunction((id) => document.querySelector('runstore-inspector').shadowRoot.querySelector(`.row[data-workflow-id="${id}"]`)?.dataset.status === 'cancelled', 'order-2', { timeout: 20_000 });
  assert.match(await openDialog(page, '[data-action="retry"][data-arg="order-2"]'), /order-2.*engine\.retry/s);
  await confirmDialog(page);
  await page.waitForFunction((id) => document.querySelector('runstore-inspector').shadowRoot.querySelector(`.row[data-workflow-id="${id}"]`)?.dataset.status === 'running', 'order-2', { timeout: 20_000 });
  const runs = await page.evaluate(async () => (await window.inspected.store.readRunChain('order-2')).map((r) => r.status));
  assert.deepEqual(runs, ['cancelled', 'running']);
});

test(title('requeue, purge and export ask first, then do what they said'), async () => {
  const page = leader;
  // A dead letter: a row its dispatcher gave up on.
  await page.evaluate(async () => {
    const { store } = window.inspected;
    const row = { dispatchKey: 'mail/42', workflowId: 'order-2', ordinal: 0, activityType: 'mail.send', input: new TextEncoder().encode('{"to":"a@b.c"}'), visibleAfter: 0, namespace: 'app', taskQueue: 'mail' };
    await store.insertOutbox([row]);
    const [claim] = await store.claimOutbox(Date.now(), 1, { scope: { namespace: 'app', taskQueue: 'mail' } });
    await store.failOutbox(claim.dispatchKey, claim.claimToken, 'mailbox full');
  });
  await page.click('runstore-inspector [data-tab="outbox"]');
  await page.click('runstore-inspector [data-outbox-filter="failed"]');
  await waitCount(page, '[data-dispatch-key="mail/42"][data-outbox-status="failed"]', 1);
  assert.match(await textIn(page, '[data-dispatch-key="mail/42"] [data-dead-reason]'), /mailbox full/);
  assert.match(await openDialog(page, '[data-action="requeue"][data-arg="mail/42"]'), /no operation that moves a dead letter back.*inserts a copy/s);
  await confirmDialog(page);
  const rows = await page.evaluate(async () => (await window.inspected.store.listOutbox(null)).items.filter((r) => r.dispatchKey.startsWith('mail/42')).map((r) => [r.status, r.deadReason, new TextDecoder().decode(r.input)]));
  assert.deepEqual(rows.map((r) => r[0]).sort(), ['failed', 'pending'], 'the dead letter stays; its copy is pending');
  assert.ok(rows.every((r) => r[2] === '{"to":"a@b.c"}'));

  // Purge: order-0 completed (the test before); the dialog counts what it will delete.
  await page.click('runstore-inspector [data-tab="store"]');
  const purge = await openDialog(page, '[data-action="purge"]');
  assert.match(purge, /purgeWorkflows.*cannot be undone/s);
  await page.waitForFunction(() => /has 1 workflow closed before/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('[data-purge-count]').textContent));
  await confirmDialog(page);
  assert.match(await textIn(page, '.toast'), /Purged 1 workflow/);
  const left = await page.evaluate(async () => (await window.inspected.store.listVisibility({}, 100, null)).records.map((r) => r.workflowId).sort());
  assert.deepEqual(left, ['order-1', 'order-2', 'order-new']);

  // Export: the whole store as a SQLite file, made in the page.
  await openDialog(page, '[data-action="export-store"]');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('runstore-inspector dialog button[value="ok"]')]);
  const file = await readFile(await download.path());
  assert.equal(file.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  assert.match(download.suggestedFilename(), /^runstore-.*\.sqlite$/);
  await page.click('runstore-inspector [data-tab="workflows"]');
});

test(title('checkpoints show what changed between the revisions read while open; conversations are shown as they are saved'), async () => {
  const page = follower;
  await page.click('runstore-inspector [data-tab="checkpoints"]');
  const write = (checkpoint, expected) =>
    page.evaluate(([checkpoint, expected]) => window.inspected.store.compareAndSwapCheckpoint({ ...checkpoint, updatedAt: Date.now() }, expected), [checkpoint, expected]);
  await write({ checkpointId: 'plan', revision: 0, state: { step: 1, plan: ['search'], note: 'draft' } }, null);
  // Heard of from the leader tab's commit, and read at revision 0 before the next one.
  await page.waitForFunction(() => /revision 0/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('[data-view="checkpoints"] li')?.textContent ?? ''));
  await write({ checkpointId: 'plan', revision: 1, state: { step: 2, plan: ['search', 'summarize'] } }, 0);
  await page.click('runstore-inspector [data-action="open-checkpoint"][data-arg="plan"]');
  await waitCount(page, '[data-diff]', 3);
  const diff = await page.evaluate(() => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('[data-diff]')].map((li) => li.textContent.replace(/\s+/g, ' ').trim()));
  assert.deepEqual(diff, ['$.step 1 → 2', '$.plan[1] added "summarize"', '$.note removed (was "draft")']);

  await page.click('runstore-inspector [data-tab="conversations"]');
  await page.evaluate(() => window.inspected.store.saveConversation({ conversationId: 'chat-7', revision: 0, formatVersion: 1, state: new TextEncoder().encode('user: hello'), updatedAt: Date.now() }, null));
  await waitCount(page, '[data-conversation="chat-7"]', 1);
  await page.waitForFunction(() => /user: hello/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('[data-conversation="chat-7"]').textContent));
  await page.click('runstore-inspector [data-tab="workflows"]');
});

test(title('keyboard: the tabs, the list and an action are reached and used with keys alone'), async () => {
  const page = leader;
  const focused = () =>
    page.evaluate(() => {
      const a = document.querySelector('runstore-inspector').shadowRoot.activeElement;
      return a ? { tab: a.dataset?.tab ?? null, cls: a.className, action: a.dataset?.action ?? null, name: a.getAttribute('name') } : null;
    });
  const tabUntil = async (check, what) => {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if (check(await focused())) return;
    }
    throw new Error(`Tab never reached ${what}: ${JSON.stringify(await focused())}`);
  };
  // The app's own control just before the inspector has the focus; Tab goes on from there.
  await page.bringToFront();
  await page.evaluate(() => {
    const before = Object.assign(document.createElement('button'), { textContent: 'the app' });
    document.querySelector('runstore-inspector').before(before);
    before.focus();
  });
  await tabUntil((f) => f?.tab === 'workflows', 'the selected tab');
  await page.keyboard.press('ArrowRight');
  assert.equal((await focused()).tab, 'effects');
  assert.equal(await page.evaluate(() => document.querySelector('runstore-inspector').view), 'effects');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await page.evaluate(() => document.querySelector('runstore-inspector').view), 'workflows');
  await tabUntil((f) => f?.cls.includes('vlist'), 'the workflow list');
  // Home goes to the first row, ArrowDown to the next, and Enter opens it.
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowDown');
  assert.equal(await countIn(page, '.row.active[data-index="1"]'), 1, 'the second row is the active one');
  const second = await page.evaluate(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('.row[data-index="1"]').dataset.workflowId);
  await page.keyboard.press('Enter');
  await page.waitForFunction((id) => document.querySelector('runstore-inspector').shadowRoot.querySelector(`[data-run-id="${id}"]`), second);
  await tabUntil((f) => f?.action === 'signal', 'Signal…');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog').open);
  assert.equal((await focused()).name, 'name', 'the dialog takes the focus, on its first field');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog').open);
});

test(title('runstore/core: in the page (its methods wrapped), and in an app\'s own worker through exposeCore'), async () => {
  const page = await openApp();
  await mount(page, { name: 'inspector-core', on: 'core', count: 2 });
  await waitCount(page, '.row[data-workflow-id]', 2);
  // The engine's commits on the core are heard: a workflow started now shows without a refresh.
  await page.evaluate(async () => (await window.inspectorPage()).start('core-late'));
  await page.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('.row[data-workflow-id="core-late"]')?.textContent.includes('waits: wait approve'), undefined, { timeout: 20_000 });
  await page.close();

  const inWorker = await openApp();
  await mount(inWorker, { on: 'worker' });
  await waitCount(inWorker, '.row[data-workflow-id]', 2);
  await inWorker.waitForFunction(() => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('.row')].every((r) => r.textContent.includes('waits: wait approve')), undefined, { timeout: 20_000 });
  // The worker's engine signalled from the page's inspector.
  await inWorker.click('runstore-inspector .row[data-workflow-id="worker-1"]');
  await openDialog(inWorker, '[data-action="signal"][data-arg="worker-1"]');
  await inWorker.evaluate(() => {
    document.querySelector('runstore-inspector').shadowRoot.querySelector('dialog [name="name"]').value = 'approve';
  });
  await confirmDialog(inWorker);
  await inWorker.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('.row[data-workflow-id="worker-1"]')?.dataset.status === 'completed', undefined, { timeout: 20_000 });
  await inWorker.close();
});

/** Workflows in the large store. */
const LARGE = 100_000;

test(title(`${LARGE.toLocaleString('en')} workflows: the first screen, a jump to the middle and to the end, scrolling`), async (t) => {
  const page = await openApp();
  const figures = await page.evaluate(async (n) => (await window.inspectorPage()).large(n), LARGE);
  const ms = (x) => `${Math.round(x)} ms`;
  t.diagnostic(`${ENGINE}: seeded in ${ms(figures.seedMs)}; first paint ${ms(figures.paintMs)}; jump to the middle ${ms(figures.middleMs)}, to the end ${ms(figures.endMs)}; scroll frames median ${figures.frameMedianMs.toFixed(1)} ms, p95 ${figures.frameP95Ms.toFixed(1)} ms`);
  console.log(`inspector at ${LARGE} workflows in ${ENGINE}: ${JSON.stringify(figures)}`);
  assert.match(figures.line, /100,000 workflows/);
  assert.ok(figures.paintMs < 3000, `first paint ${ms(figures.paintMs)}`);
  assert.ok(figures.middleMs < 5000 && figures.endMs < 5000, `jumps ${ms(figures.middleMs)}, ${ms(figures.endMs)}`);
  await page.close();
});

test(title('in Node, where there is no DOM: runstore/inspector loads, defines nothing, and its core adapter works'), async () => {
  const appDir = fileURLToPath(new URL('../app/', import.meta.url));
  const script = `
    const inspector = await import('runstore/inspector');
    const { init, RunStoreCore } = await import('runstore/core');
    await init();
    const store = inspector.coreStore(await RunStoreCore.open('ssr', { persistence: 'memory' }));
    const heard = [];
    store.subscribe(null, (change) => heard.push(change.areas));
    await store.append('wf', [{ type: 'custom', name: 'a', recordedAt: 1 }], 0);
    console.log(JSON.stringify({ exports: Object.keys(inspector).sort(), customElements: typeof customElements, head: await store.head('wf'), heard }));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: appDir });
  assert.deepEqual(JSON.parse(stdout), {
    exports: ['RunStoreInspector', 'connectCore', 'coreStore', 'exposeCore', 'syncServerStore'],
    customElements: 'undefined',
    head: 1,
    heard: [['journal']],
  });
});
