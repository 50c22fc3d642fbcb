// The demo with a sync server (as `npm start -- --sync` serves it), in headless Chromium: two
// browser profiles (two persistent contexts, each its own OPFS) open the built demo (www/dist,
// plus the sync.json scripts/demo.sh writes) and sync live through the runstore-sync binary
// (RUNSTORE_SYNC_BIN; on PostgreSQL when RUNSTORE_PG_URL is set, else on a SQLite file). A
// workflow started in one profile runs there, appears in the other's list and follows it to
// completion there; its side effects happen in its own profile only; the sync status shows
// what was pushed and pulled, with no conflicts; with the server down it says offline, and the
// work done meanwhile syncs once the server is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic } from './browser.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOKEN = 'demo-token';
const NAMESPACE = 'demo';

let site;
let siteDir;
let settings;
let server;
const profiles = {};
const problems = [];

before(async () => {
  settings = syncServerSettings(await freePort(), { [TOKEN]: [NAMESPACE] });
  console.log(`sync server on ${settings.backend}`);
  server = await startSyncServer(settings);
  siteDir = mkdtempSync(path.join(tmpdir(), 'runstore-demo-sync-'));
  cpSync(path.join(root, 'www/dist'), siteDir, { recursive: true });
  writeFileSync(path.join(siteDir, 'sync.json'), JSON.stringify({ url: settings.url, token: TOKEN, namespace: NAMESPACE }));
  site = await serveStatic(siteDir);
  for (const name of ['a', 'b']) {
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    const page = await browser.newPage();
    page.on('pageerror', (error) => problems.push(`${name}: page error: ${error.message}`));
    page.on('console', (message) => {
      // Chromium logs each request to the stopped server (the offline test), and the long-poll
      // the kill cut short (refused, reset, empty, or its socket gone); the page itself logs none of them.
      if (/Failed to load resource: net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE|SOCKET_NOT_CONNECTED)/.test(message.text())) return;
      if (message.type() === 'error') problems.push(`${name}: console error: ${message.text()}`);
    });
    await page.goto(site.url);
    await page.waitForSelector('body[data-store="ready"]', { timeout: 20_000 });
    profiles[name] = { browser, page };
  }
});

after(async () => {
  for (const { browser } of Object.values(profiles)) await browser.close();
  await server?.stop('SIGTERM');
  await site?.close();
  if (siteDir) rmSync(siteDir, { recursive: true, force: true });
});

/** A workflow's row in the inspector's list (its shadow root, which playwright's selectors reach into). */
const row = (id, status = null) => `#inspector .row[data-workflow-id="${id}"]${status ? `[data-status="${status}"]` : ''}`;

/** Starts a workflow with the page's button; resolves to its id. */
async function start(page, type) {
  const before = await page.evaluate(() => window.demo.store.listWorkflowIds().then((p) => p.items));
  await page.click(`[data-start="${type}"]`);
  for (let tries = 0; tries < 100; tries++) {
    const ids = await page.evaluate(() => window.demo.store.listWorkflowIds().then((p) => p.items));
    const id = ids.find((id) => !before.includes(id));
    if (id) return id;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no ${type} workflow started`);
}

/** The sync status line's text, white space collapsed. */
const syncText = (page) => page.$eval('#sync', (el) => el.textContent.replace(/\s+/g, ' ').trim());

/** The workflow's events as [seq, type or name] pairs. */
function history(page, id) {
  return page.evaluate(async (id) => (await window.demo.store.readHistory(id, { limit: 1000 })).items.map((e) => [e.seq, e.name ?? e.type]), id);
}

/** Idempotency keys of the side effects the profile's simulated services applied for `id`. */
function appliedEffects(page, id) {
  return page.evaluate((id) => Object.keys(window.demo.worldLedger()).filter((key) => key.startsWith(`${id}/`)), id);
}

test('both profiles show the sync server, synced live, without conflicts', async () => {
  for (const { page } of Object.values(profiles)) {
    await page.waitForSelector('#sync[data-sync="synced"]', { timeout: 20_000 });
    assert.match(await syncText(page), /Synced with http:\/\/127\.0\.0\.1:\d+ \(namespace demo\) · last sync .* no conflicts/);
  }
  // The inspector's sync view: the leader's progress and what the store keeps of the target.
  const { page } = profiles.a;
  await page.click('#inspector [data-tab="sync"]');
  await page.waitForSelector('#inspector [data-sync-state="synced"]', { timeout: 20_000 });
  await page.waitForFunction(() => /feed cursor/.test(document.getElementById('inspector').shadowRoot.querySelector('[data-view="sync"]').textContent));
  const view = await page.textContent('#inspector [data-view="sync"]');
  assert.match(view, /namespace demo.*last sync\s*\d\d:\d\d:\d\d.*feed cursor\s*\d+.*Conflicts\s*0\s*none/s);
  await page.click('#inspector [data-tab="workflows"]');
});

test('a workflow started in one profile appears in the other and is run only where it started', async () => {
  const { a, b } = profiles;
  const fromA = await start(a.page, 'order-fulfilment');
  await b.page.waitForSelector(row(fromA), { timeout: 30_000 });
  const fromB = await start(b.page, 'research-agent');
  await a.page.waitForSelector(row(fromB), { timeout: 30_000 });
  // The research agent waits for an approval, given where it runs; elsewhere it is shown only.
  await b.page.waitForSelector(`[data-approve="${fromB}"]`, { timeout: 60_000 });
  await a.page.waitForSelector(`${row(fromB)} .badge.synced`, { timeout: 30_000 });
  assert.equal(await a.page.locator(`[data-approve="${fromB}"]`).count(), 0, 'no Approve button where it does not run');
  await b.page.click(`[data-approve="${fromB}"]`);
  // Each finishes in its own profile, and the other follows it to the end.
  await a.page.waitForSelector(row(fromA, 'completed'), { timeout: 60_000 });
  await b.page.waitForSelector(row(fromB, 'completed'), { timeout: 60_000 });
  await b.page.waitForSelector(row(fromA, 'completed'), { timeout: 30_000 });
  await a.page.waitForSelector(row(fromB, 'completed'), { timeout: 30_000 });
  for (const id of [fromA, fromB]) {
    assert.deepEqual(await history(b.page, id), await history(a.page, id), `${id}: the same journal in both profiles`);
  }
  assert.ok((await appliedEffects(a.page, fromA)).length > 0);
  assert.deepEqual(await appliedEffects(b.page, fromA), [], 'no effect of A’s workflow performed in B');
  assert.ok((await appliedEffects(b.page, fromB)).length > 0);
  assert.deepEqual(await appliedEffects(a.page, fromB), [], 'no effect of B’s workflow performed in A');
  for (const [name, { page }] of Object.entries(profiles)) {
    const status = { ...(await page.$eval('#sync', (el) => ({ ...el.dataset }))), text: await syncText(page) };
    assert.equal(status.sync, 'synced', `${name}: ${status.text}`);
    assert.ok(Number(status.pushed) > 0 && Number(status.pulled) > 0, `${name} pushed and pulled: ${status.text}`);
    assert.match(status.text, /no conflicts/);
  }
  mkdirSync(path.join(root, 'tests/artifacts'), { recursive: true });
  await a.page.screenshot({ path: path.join(root, 'tests/artifacts/demo-sync-a.png'), fullPage: true });
  await b.page.screenshot({ path: path.join(root, 'tests/artifacts/demo-sync-b.png'), fullPage: true });
});

test('with the server down the page says offline; work done meanwhile syncs once it is back', async () => {
  const { a, b } = profiles;
  await server.stop();
  const offline = await start(a.page, 'order-fulfilment');
  await a.page.waitForSelector('#sync[data-sync="offline"]', { timeout: 30_000 });
  assert.match(await syncText(a.page), /Offline .* UNAVAILABLE: .*retrying, changes made here sync when it is back/);
  await a.page.waitForSelector(row(offline, 'completed'), { timeout: 60_000 });
  server = await startSyncServer(settings);
  await b.page.waitForSelector(row(offline, 'completed'), { timeout: 60_000 });
  await a.page.waitForSelector('#sync[data-sync="synced"]', { timeout: 30_000 });
  assert.deepEqual(await history(b.page, offline), await history(a.page, offline));
  assert.deepEqual(await appliedEffects(b.page, offline), []);
});

test('no page errors', () => {
  assert.deepEqual(problems, []);
});
