// LangGraph.js in Chromium on the shared OPFS store, through the packed package
// (tests/langgraph, built with Vite): a graph interrupted by a page reload resumes from its last
// checkpoint and performs no tool call twice; two tabs run graphs on different threads through
// one store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic } from './browser.mjs';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'langgraph', 'dist');
const KEYS = ['call-weather', 'call-convert', 'call-book', 'call-notify'];
const FINAL = 'Done: a picnic in Lyon at 70 °F, booked, and Ada knows.';
let server;
let browser;

before(async () => {
  server = await serveStatic(DIST);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(thread, toolMs) {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(`${server.url}?thread=${thread}&toolMs=${toolMs}`);
  return page;
}

const finished = (page) => page.waitForFunction(() => window.agent?.done || window.agent?.error, null, { timeout: 60_000 });
const worldOf = (page, thread) => page.evaluate((keys) => Object.fromEntries(keys.map((key) => [key, window.world.read(key)])), KEYS.map((k) => `${thread}/${k}`));

test('a graph interrupted by a reload resumes from its last checkpoint; no tool call is performed twice', async () => {
  const thread = `reload-${Date.now()}`;
  const page = await open(thread, 300);
  // Reload once the second tool call reached the service: the graph is mid-run.
  await page.waitForFunction((key) => window.world.read(key).requests > 0, `${thread}/call-convert`, { timeout: 60_000 });
  const before = await page.evaluate(async (t) => (await window.saver.getTuple({ configurable: { thread_id: t } }))?.config.configurable.checkpoint_id, thread);
  assert.ok(before, 'checkpoints were stored before the reload');
  await page.reload();
  await finished(page);
  const agent = await page.evaluate(() => window.agent);
  assert.equal(agent.error, null);
  assert.ok(agent.resumedFrom, 'the reloaded page resumed the thread');
  assert.ok(agent.resumedFrom >= before, `resumed from ${agent.resumedFrom}, the last checkpoint before the reload was ${before}`);
  assert.equal(agent.messages.at(-1).content, FINAL);
  assert.equal(agent.messages.filter((m) => m.type === 'tool').length, KEYS.length);
  const world = await worldOf(page, thread);
  for (const key of KEYS) {
    assert.equal(world[`${thread}/${key}`].applied, 1, key);
    // A call completed before the reload was never sent again; one cut off by it was sent
    // once more, under the same key, only after the ledger said its outcome was unknown.
    const resent = agent.unknown.includes(`${thread}/${key}`) ? 1 : 0;
    assert.equal(world[`${thread}/${key}`].requests, 1 + resent, key);
  }
  assert.equal(world[`${thread}/call-weather`].requests, 1);
  const effects = await page.evaluate(async (t) => {
    const found = [];
    for (const [name, key] of [['weather', 'call-weather'], ['convert', 'call-convert'], ['book', 'call-book'], ['notify', 'call-notify']]) {
      found.push((await window.store.findEffect(`tool.${name}`, `${t}/${key}`))?.status.type);
    }
    return found;
  }, thread);
  assert.deepEqual(effects, ['completed', 'completed', 'completed', 'completed']);
  await page.close();
});

test('two tabs run graphs on different threads through the shared store', async () => {
  const stamp = Date.now();
  const [a, b] = await Promise.all([open(`tab-a-${stamp}`, 50), open(`tab-b-${stamp}`, 50)]);
  await Promise.all([finished(a), finished(b)]);
  for (const page of [a, b]) {
    const agent = await page.evaluate(() => window.agent);
    assert.equal(agent.error, null);
    assert.equal(agent.messages.at(-1).content, FINAL);
  }
  const leaders = await Promise.all([a, b].map((page) => page.evaluate(() => window.store.isLeader)));
  assert.deepEqual(leaders.sort(), [false, true], 'one tab leads, the other calls through it');
  // Each tab sees both threads' checkpoints.
  for (const page of [a, b]) {
    const threads = await page.evaluate(async () => {
      const seen = new Set();
      for await (const tuple of window.saver.list({})) seen.add(tuple.config.configurable.thread_id);
      return [...seen];
    });
    assert.ok(threads.includes(`tab-a-${stamp}`) && threads.includes(`tab-b-${stamp}`), threads.join(', '));
  }
  await Promise.all([a.close(), b.close()]);
});
