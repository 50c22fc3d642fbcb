// The tab protocol (js/tabs.js in each page, js/serve.js in each worker, the real store in
// memory) on a browser faked in Node (fake-browser.mjs), where the point is to end pages and
// workers at exact moments: after a write committed and before its answer left, while a take-
// over opens the store. The same defects in real Chromium pages: tabs.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Origin, openClient, privateWorker, random, sleep, until } from './fake-browser.mjs';

const event = (n) => ({ type: 'custom', name: 'e', recordedAt: 1, data: { n } });

/** The events stored for `workflowId`, read straight from the store's content. */
async function stored(origin, name, workflowId) {
  const store = await origin.disk(name);
  return store.readHistory(workflowId).items.map((e) => e.data.n);
}

/** Ends the worker that applies request `id`, once: after it committed, before its answer or notice left. */
function endWorkerAfter(origin, id) {
  origin.afterWrite = (worker, method, requestId) => {
    if (requestId !== id) return;
    origin.afterWrite = null;
    worker.end();
  };
}

/** Which tab leads, as the tabs say it. */
const leaderOf = (clients) => clients.find((c) => c.tabs.isLeader);

test('a caller changing its arguments after the call changes nothing written, sent or sent again', async () => {
  const origin = new Origin({ seed: 1 });
  const a = await openClient(origin.page(), 'capture');
  const b = await openClient(origin.page(), 'capture');
  const c = await openClient(origin.page(), 'capture');

  // (a) A follower's calls made while its link is still being set up.
  const first = [event(1)];
  const read = b.call('head', ['first']);
  const write = b.call('append', ['first', first, 0], 'r-first');
  first[0].data.n = 99;
  first.push(event(100));
  assert.deepEqual(await Promise.all([read, write]), [0, 1]);
  assert.deepEqual(await stored(origin, 'capture', 'first'), [1]);

  // (b) The leader's worker ended before the write reached it: sent again to the next leader.
  const before = [event(2)];
  const lost = b.call('append', ['before', before, 0], 'r-before');
  before[0].data.n = 99;
  origin.pages[0].close();
  assert.equal(await lost, 1);
  assert.deepEqual(await stored(origin, 'capture', 'before'), [2]);

  // (c) The leader's worker ended after the write committed, before its answer left: the
  // write sent again answers what it committed, not CONFLICT for other content.
  const leader = leaderOf([b, c]);
  const follower = leader === b ? c : b;
  endWorkerAfter(origin, 'r-after');
  const after = [event(3)];
  const answered = follower.call('append', ['after', after, 0], 'r-after');
  after[0].data.n = 99;
  assert.equal(await answered, 1);
  assert.deepEqual(await stored(origin, 'capture', 'after'), [3]);
  await Promise.all([b.close(), c.close()]);
});

test('a commit whose leader ended before announcing it is announced by its replay, once in every tab', async () => {
  const origin = new Origin({ seed: 2 });
  const clients = [];
  for (let i = 0; i < 3; i++) clients.push(await openClient(origin.page(), 'announce'));
  const caller = clients[2];
  endWorkerAfter(origin, 'r-lost');
  const step = { operations: [{ op: 'scheduleTimer', workflowId: 'wf', timerId: 't', fireAt: 5 }] };
  const outcome = await caller.call('commit', [step], 'r-lost');
  // Heard by every tab still open (the first leader's page lost only its worker).
  await until(() => clients.every((c) => c.heard.some((h) => h.requestId === 'r-lost')), 5_000, 'every tab hearing r-lost');
  // The app sends the same step again: nothing is applied, and no tab hears it twice.
  assert.deepEqual(await caller.call('commit', [{ ...step, requestId: 'r-lost' }], 'unused'), { ...outcome, replayed: true });
  await sleep(50);
  for (const client of clients) {
    assert.deepEqual(client.heard.filter((h) => h.requestId === 'r-lost').map((h) => h.areas), [['timers']]);
  }
  assert.equal(outcome.replayed, false, 'the caller hears the outcome it committed');
  await Promise.all(clients.map((c) => c.close()));
});

test("a leader tab's subscribers hear of each of its writes before the write settles, also with a read of the feed or 40 writes in one message", async () => {
  for (const seed of [1, 2, 3]) {
    const origin = new Origin({ seed, maxDelayMs: 5 });
    const tab = await openClient(origin.page(), `own-${seed}`);
    await until(() => tab.tabs.isLeader, 3_000, 'the tab leads');
    const events = (n) => [{ type: 'custom', name: 'e', recordedAt: 1, data: { n } }];
    const unheard = [];
    const settled = (id) => () => tab.heard.some((h) => h.requestId === id) || unheard.push(id);
    for (let round = 0; round < 10; round++) {
      const id = `w${round}`;
      // The write and the read of the feed leave in one message, after the head read.
      tab.call('head', ['x']);
      const written = tab.call('append', [id, events(round), 0], id).then(settled(id));
      tab.call('changesSince', [Number.MAX_SAFE_INTEGER]);
      await written;
      // Across the worker's 10 ms of gathering, and not.
      await sleep(round % 2 === 0 ? 15 : 1);
    }
    await Promise.all(Array.from({ length: 40 }, (_, i) => tab.call('append', [`b${i}`, events(i), 0], `b${i}`).then(settled(`b${i}`))));
    assert.deepEqual(unheard, [], `seed ${seed}`);
    await tab.close();
    origin.end();
  }
});

test('deletes and purges sent again after a hand-off answer what their first application answered', async () => {
  const origin = new Origin({ seed: 3 });
  const a = await openClient(origin.page(), 'deletes');
  const b = await openClient(origin.page(), 'deletes');
  const closed = (id) => [{ type: 'started', workflowType: 't', runId: id, recordedAt: 1 }, { type: 'completed', recordedAt: 2 }];
  await b.call('append', ['old-1', closed('1'), 0], 'p1');
  await b.call('append', ['old-2', closed('2'), 0], 'p2');
  const artifact = await b.call('putArtifact', [{ scope: 's', mediaType: 'text/plain', bytes: new Uint8Array([1]) }, 1], 'put');
  const hash = 'ab'.repeat(16);
  await b.call('putPackage', [{ workflowType: 't', contentHash: hash, archive: new Uint8Array(2), deployedAt: 1 }], 'pkg');
  let leader = a;
  const answers = {};
  for (const [id, method, args] of [
    ['d-artifact', 'deleteArtifact', ['s', artifact.artifactId]],
    ['d-package', 'deletePackage', ['t', hash]],
    ['d-purge', 'purgeWorkflows', [10, 1]],
  ]) {
    const caller = leader === a ? b : a;
    endWorkerAfter(origin, id);
    answers[method] = await caller.call(method, args, id);
    leader = leaderOf([a, b]) ?? leader;
  }
  assert.equal(answers.deleteArtifact, true);
  assert.deepEqual(answers.deletePackage, ['t']);
  assert.equal(answers.purgeWorkflows.workflows, 1);
  const store = await origin.disk('deletes');
  assert.equal(store.listWorkflowIds().items.length, 1, 'one purge of limit 1 purged one workflow');
  await Promise.all([a.close(), b.close()]);
});

test("a leader whose wasm traps answers that call BACKEND and ends its worker: the next leader serves, with what was stored", async () => {
  const origin = new Origin({ seed: 5 });
  const a = await openClient(origin.page(), 'trap');
  const b = await openClient(origin.page(), 'trap');
  assert.equal(await b.call('append', ['before', [event(1)], 0], 't-before'), 1);
  const trapped = origin.pages[0].context;
  assert.ok(a.tabs.isLeader);
  origin.trapBefore = (method, requestId) => requestId === 't-trap';
  const trappedCall = b.call('append', ['trapped', [event(2)], 0], 't-trap');
  // Sent with it, after it: the trapped leader runs none of them; the next leader answers them.
  const later = [b.call('append', ['later', [event(4)], 0], 't-later'), b.call('head', ['before'])];
  await assert.rejects(trappedCall, (error) => {
    assert.equal(error.code, 'BACKEND');
    assert.equal(error.requestId, 't-trap');
    assert.equal(error.trapped, true);
    assert.equal(error.message, "the store's WebAssembly code trapped (memory access out of bounds); whether that call was applied is unknown; the next leader serves the store");
    return true;
  });
  origin.trapBefore = null;
  // The leader's worker ended itself; its page took the store over with a fresh worker.
  const workers = () => [...trapped.children].filter((context) => context.kind === 'worker');
  await until(() => workers().some((worker) => !worker.alive), 2_000, 'the trapped worker ended');
  assert.equal(await b.call('append', ['after', [event(3)], 0], 't-after'), 1);
  assert.equal(await a.call('head', ['before']), 1);
  assert.deepEqual(await stored(origin, 'trap', 'before'), [1]);
  assert.deepEqual(await stored(origin, 'trap', 'trapped'), [], 'the trapped call applied nothing');
  assert.deepEqual(await stored(origin, 'trap', 'after'), [3]);
  assert.deepEqual(await Promise.all(later), [1, 1]);
  assert.deepEqual(await stored(origin, 'trap', 'later'), [4]);
  await Promise.all([a.close(), b.close()]);
});

test("a private store whose wasm traps answers that call and every later one BACKEND, and closes without running it", async () => {
  const worker = privateWorker();
  assert.deepEqual(await worker.call('open', ['private-trap', { persistence: 'memory' }]), { id: 1, ok: true, value: { persistence: 'memory' } });
  assert.equal((await worker.call('head', ['wf'])).value, 0);
  worker.trapNext = true;
  const trapped = await worker.call('head', ['wf']);
  worker.trapNext = false;
  assert.equal(trapped.error.code, 'BACKEND');
  assert.deepEqual(trapped.error.fields, { requestId: null, trapped: true });
  assert.equal(trapped.error.message, "the store's WebAssembly code trapped (memory access out of bounds); whether that call was applied is unknown; close the store and open it again");
  // The store would answer now; the worker runs none of its wasm again.
  assert.deepEqual((await worker.call('head', ['wf'])).error, trapped.error);
  assert.deepEqual(await worker.call('close', []), { id: 5, ok: true, value: undefined });
});

test('a live tab keeps its link while 300 others open and close, and the leader keeps no link of a closed tab', async () => {
  const origin = new Origin({ seed: 4, maxDelayMs: 0 });
  const leader = await openClient(origin.page(), 'links', { timeoutMs: 2_000 });
  const live = await openClient(origin.page(), 'links', { timeoutMs: 2_000 });
  assert.equal(await live.call('head', ['wf']), 0);
  const page = origin.page();
  for (let i = 0; i < 300; i++) {
    const client = await openClient(page, 'links');
    await client.call('head', ['wf']);
    await client.close();
  }
  assert.equal(await live.call('append', ['wf', [event(1)], 0], 'after-300'), 1);
  // The leader's worker drops each closed tab's link once that tab let go of its lock.
  const links = () => [...origin.channels.keys()].filter((name) => name.includes(':link:') && origin.channels.get(name).size > 0);
  await until(() => links().length === 1, 2_000, `only the live tab's link held (${links().length})`);
  await Promise.all([leader.close(), live.close()]);
});

test('a lost request for a link, and the calls it carried, are asked for again: the tab joins and is answered', async () => {
  const origin = new Origin({ seed: 7 });
  const first = origin.page();
  await openClient(first, 'lost');
  const next = await openClient(origin.page(), 'lost');
  // The joining tab's first request for its link is lost.
  let lost = 0;
  origin.lose = (name) => name.endsWith(':requests') && lost++ < 1;
  const follower = await openClient(origin.page(), 'lost');
  assert.equal(lost, 2, 'the request was lost, and asked for again');
  // The leader's tab ends; the follower's call waits for the next leader and rides on its
  // request for a link to it, which is lost.
  lost = 0;
  origin.lose = (name, data) => name.endsWith(':requests') && data.calls?.length > 0 && lost++ < 1;
  first.close();
  assert.equal(await follower.call('append', ['wf', [event(1)], 0], 'r-carried'), 1);
  assert.equal(lost, 2, 'the request carrying the call was lost, and asked for again');
  assert.equal(next.tabs.isLeader, true);
  await Promise.all([follower.close(), next.close()]);
});

test('close() during a take-over settles, and the closed tab does not lead', async () => {
  for (const delay of [null, 0, 1, 3, 8]) {
    const origin = new Origin({ seed: 5 });
    origin.openDelayMs = 20;
    const a = await openClient(origin.page(), 'takeover');
    const b = await openClient(origin.page(), 'takeover');
    const c = await openClient(origin.page(), 'takeover');
    const closingA = a.close();
    if (delay === null) await closingA;
    else await sleep(delay);
    const closing = b.close();
    const settled = await Promise.race([closing.then(() => 'settled'), sleep(8_000).then(() => 'pending')]);
    assert.equal(settled, 'settled', `B's close after ${delay} ms`);
    assert.equal(b.tabs.isLeader, false);
    // The store goes on in the third tab.
    assert.equal(await c.call('append', ['wf', [event(1)], 0], `r-${delay}`), 1);
    assert.equal(c.tabs.isLeader, true);
    await Promise.all([c.close(), closingA]);
    const { held } = await origin.locks.query();
    assert.deepEqual(held.map((lock) => lock.name).filter((n) => !n.startsWith('runstore-alive')), [], `locks held after delay ${delay}`);
  }
});

test('a failed or timed-out open lets go of the leader and pool locks and never leads', async () => {
  const origin = new Origin({ seed: 6 });
  origin.failOpen = true;
  await assert.rejects(openClient(origin.page(), 'failing'), (error) => error.code === 'BACKEND');
  let held = (await origin.locks.query()).held.map((lock) => lock.name);
  assert.deepEqual(held, []);

  origin.failOpen = false;
  origin.openDelayMs = 600;
  const announced = [];
  const listener = new (origin.page().context.BroadcastChannel)('runstore:slow:control');
  listener.onmessage = ({ data }) => data.type === 'leader' && announced.push(data.leaderId);
  await assert.rejects(openClient(origin.page(), 'slow', { timeoutMs: 200 }), (error) => error.code === 'UNAVAILABLE');
  held = (await origin.locks.query()).held.map((lock) => lock.name);
  assert.deepEqual(held, []);
  await sleep(800);
  assert.deepEqual(announced, [], 'the tab whose open gave up never announced itself');
  listener.close();
});

/**
 * Random interleavings of calls, closes, tab and worker ends, pages hidden: every call
 * settles; the store holds exactly the writes whose calls resolved, plus maybe some that
 * rejected with UNAVAILABLE, each with the data it had when called; each commit is announced
 * once to every tab that lived through it.
 */
async function runInterleaving(seed) {
  const r = random(seed);
  const origin = new Origin({ seed, maxDelayMs: 3 });
  const name = `property-${seed}`;
  const clients = [];
  const calls = [];
  const open = async () => {
    const client = await openClient(origin.page(), name, { timeoutMs: 3_000 });
    client.openedAt = calls.length;
    client.page = origin.pages.at(-1);
    clients.push(client);
  };
  for (let i = 0; i < 3; i++) await open();
  // Artifacts for the deletes among the calls, one per delete.
  const artifacts = [];
  const store = await origin.disk(name);
  for (let i = 0; i < 20; i++) artifacts.push(store.putArtifact({ scope: 's', mediaType: 'm', bytes: new Uint8Array([i]) }, 1).artifactId);
  const deletes = [];
  for (let step = 0; step < 60; step++) {
    const live = clients.filter((c) => !c.closing && c.page.context.alive);
    if (live.length < 2) await open();
    const client = r.pick(clients.filter((c) => !c.closing && c.page.context.alive));
    const choice = r.next();
    if (choice < 0.15 && artifacts.length > 0) {
      const artifactId = artifacts.pop();
      const call = { artifactId, settled: null };
      call.promise = client.call('deleteArtifact', ['s', artifactId], `${seed}-d${step}`).then(
        (value) => (call.settled = { value }),
        (error) => (call.settled = { code: error.code }),
      );
      call.client = client;
      deletes.push(call);
    } else if (choice < 0.75) {
      const id = `${seed}-${step}`;
      const data = { n: step };
      const args = ['wf-' + step, [{ type: 'custom', name: 'e', recordedAt: 1, data }], 0];
      const call = { id, step, client, settled: null, announcedTo: [] };
      call.promise = client.call('append', args, id).then(
        (value) => (call.settled = { value }),
        (error) => (call.settled = { code: error.code }),
      );
      calls.push(call);
      // The caller changes its objects at once: nothing may carry the change.
      data.n = -1;
      args[0] = 'mutated';
    } else if (choice < 0.82) {
      client.closing = true;
      client.close();
    } else if (choice < 0.89) {
      const leader = leaderOf(clients);
      if (leader) (r.next() < 0.5 ? leader.page.context.children.values().next().value : leader.page.context)?.end();
    } else if (choice < 0.93) {
      client.page.hide();
      client.hidden = true;
    }
    await sleep(r.int(6));
  }
  // Every call of a tab still alive settles (a tab that ended took its calls with it).
  const owned = [...calls, ...deletes].filter((c) => c.client.page.context.alive);
  await Promise.race([Promise.all(owned.map((c) => c.promise)), sleep(15_000)]);
  const pending = owned.filter((c) => c.settled === null).map((c) => c.id ?? c.artifactId);
  // A leader ended holding changes it had not announced yet: its tabs read them from the feed
  // once the next leader serves. A page that hid gives up leading (it may not come back): if
  // every page still open hid, a new one opens, as a user's next visit would.
  if (!clients.some((c) => c.page.context.alive && !c.closing && !c.hidden)) await open();
  // Let the last notices arrive (a tab that heard one behind a gap reads the feed first, which
  // waits for a leader), then end everything.
  const unheard = () =>
    calls.some((call) => call.settled?.value === 1 && clients.some((client) =>
      client.page.context.alive && !client.closing && client.openedAt <= calls.indexOf(call) &&
      !client.heard.some((h) => h.requestId === call.id)));
  await until(async () => !unheard(), 10_000, 'every notice heard').catch(() => {});
  await sleep(100);
  const problems = [];
  for (const { artifactId, settled } of deletes) {
    const gone = store.listArtifacts('s').items.every((a) => a.artifactId !== artifactId);
    if (settled?.value === true && !gone) problems.push(`delete of ${artifactId} answered true, the artifact is there`);
    else if (settled && settled.value !== true && settled.code !== 'UNAVAILABLE') problems.push(`delete of ${artifactId} answered ${JSON.stringify(settled)}`);
    else if (settled?.code !== undefined && settled.code !== 'UNAVAILABLE' && gone) problems.push(`delete of ${artifactId} rejected, the artifact is gone`);
  }
  for (const call of calls) {
    const items = store.readHistory(`wf-${call.step}`).items.map((e) => e.data.n);
    const kept = items.length === 1 && items[0] === call.step;
    const outcome = call.settled;
    if (items.length > 1 || (items.length === 1 && !kept)) problems.push(`${call.id} stored as ${JSON.stringify(items)}`);
    else if (outcome?.value === 1 && !kept) problems.push(`${call.id} resolved but is not stored`);
    else if (outcome && outcome.value === undefined && outcome.code !== 'UNAVAILABLE' && kept) problems.push(`${call.id} rejected with ${outcome.code} but is stored`);
    else if (outcome?.value !== undefined && outcome.value !== 1) problems.push(`${call.id} answered ${outcome.value}`);
    // A call that resolved was announced (after its answer, or by the replay that answered
    // it), once, to every tab that was open before the call and still is.
    if (outcome?.value !== 1) continue;
    for (const client of clients) {
      if (!client.page.context.alive || client.closing || client.openedAt > calls.indexOf(call)) continue;
      const times = client.heard.filter((h) => h.requestId === call.id).length;
      if (times !== 1) problems.push(`${call.id} announced ${times} times to a tab`);
    }
  }
  await Promise.all(clients.filter((c) => c.page.context.alive).map((c) => c.close()));
  origin.end();
  return { calls: calls.length, pending, problems, resolved: calls.filter((c) => c.settled?.value === 1).length };
}

test('any interleaving of calls, closes and leader deaths: every call settles, each write is stored and announced once, as called', async () => {
  const runs = Number(process.env.RUNSTORE_PROTOCOL_RUNS ?? 12);
  const first = Number(process.env.RUNSTORE_PROTOCOL_SEED ?? Date.now() % 100_000);
  let total = 0;
  let resolved = 0;
  for (let seed = first; seed < first + runs; seed++) {
    const result = await runInterleaving(seed);
    total += result.calls;
    resolved += result.resolved;
    assert.deepEqual(result.pending, [], `seed ${seed}: calls left pending`);
    assert.deepEqual(result.problems, [], `seed ${seed}`);
  }
  console.log(`interleavings: ${runs} runs from seed ${first}, ${total} calls, ${resolved} resolved`);
});
