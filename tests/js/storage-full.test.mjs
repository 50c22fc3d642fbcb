// A full origin: with the origin's quota lowered (Chromium: through the DevTools protocol;
// Firefox: its quota manager's pref; WebKit offers no way, so it does not run there), writes past it
// fail with STORAGE_FULL (not BACKEND, not a trap), every acknowledged write stays readable,
// deleting and purging work while full, also after a reopen that found no room for the
// store's reserve, and what was deleted can be written again: in the same session (the room
// stays with the store's files) and after a reopen (the origin's usage went down by it). Run by
// scripts/test-js.sh after the app is built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CAN_LIMIT_QUOTA, ENGINE, useTestApp } from './browser.mjs';

const QUOTA = 24 * 1024 * 1024;
const app = useTestApp({ quota: QUOTA });
const skip = !CAN_LIMIT_QUOTA && `${ENGINE} offers no way to lower an origin's quota`;
test('a full origin gives STORAGE_FULL, keeps what it acknowledged, and recovers by deleting', { skip }, async () => {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  await app.limitQuota(page);

  const report = await page.evaluate(async () => {
    const { RunStore, RunStoreError } = window.runstore;
    const usage = async () => (await navigator.storage.estimate()).usage;
    const outcome = async (write) => {
      try {
        await write();
        return 'ok';
      } catch (error) {
        return error.code;
      }
    };
    let store = await RunStore.open('full-origin', { persistence: 'opfs' });
    const reopen = async () => {
      await store.close();
      store = await RunStore.open('full-origin', { persistence: 'opfs' });
    };
    const now = Date.now();
    // Closed workflows with large events (3.2 MB), for the purge.
    const text = 'x'.repeat(200_000);
    const bulk = (w) => {
      const events = [{ type: 'started', workflowType: 'bulk', runId: `r${w}`, recordedAt: now }];
      for (let i = 0; i < 4; i++) events.push({ type: 'custom', name: 'chunk', recordedAt: now, data: { text } });
      events.push({ type: 'completed', recordedAt: now });
      return events;
    };
    const appendBulk = (prefix) => async () => {
      for (let w = 0; w < 4; w++) await store.append(`${prefix}-${w}`, bulk(w), 0);
    };
    await appendBulk('bulk')();
    // Fill: 1 MiB artifacts, then 64 KiB ones, then single small events, each until refused.
    const acknowledged = [];
    const refusals = [];
    let head = 0;
    const fill = async (write) => {
      for (let i = 0; i < 10_000; i++) {
        try {
          await write(i);
        } catch (error) {
          refusals.push({ code: error.code, isError: error instanceof RunStoreError && error instanceof Error });
          return;
        }
      }
      refusals.push({ code: 'never refused' });
    };
    const put = (size, tag) => async (i) => {
      const bytes = new Uint8Array(size).fill((i * 7 + size) % 251);
      const meta = await store.putArtifact({ scope: 'fill', mediaType: 'application/octet-stream', name: `${tag}-${i}`, bytes }, now);
      acknowledged.push({ id: meta.artifactId, size, fill: bytes[0] });
    };
    await fill(put(1 << 20, 'mib'));
    await fill(put(64 << 10, 'kib'));
    await fill(async () => {
      head = await store.append('log', [{ type: 'custom', name: 'tick', recordedAt: now, data: { n: head } }], head);
    });
    // A delete on the full origin may take the room the store holds back for deletes; filling
    // up again then uses that room for writes.
    const firstDelete = await store.deleteArtifact('fill', acknowledged.shift().id);
    await fill(put(64 << 10, 'refill'));
    const full = await usage();
    const filled = acknowledged.length;

    // Reads work while full, and everything acknowledged is there.
    const readBack = async (list) => {
      for (const a of list) {
        const artifact = await store.getArtifact('fill', a.id); // verifies the digest
        if (artifact.bytes.length !== a.size || artifact.bytes[a.size - 1] !== a.fill) return `artifact ${a.id} differs`;
      }
      const log = (await store.readHistory('log', { limit: 10_000 })).items;
      if (log.length !== head || log.some((e, i) => e.data.n !== i)) return `log has ${log.length} of ${head}`;
      return 'ok';
    };
    const readsWhileFull = await readBack(acknowledged);

    // Opened again while full, as after a reload: the files' handles are new and hold no room
    // beyond what the files hold.
    await reopen();

    // Deleting and purging work, and every freed page goes back to the file system.
    const deleteAll = async () => {
      const deleted = acknowledged.splice(0, acknowledged.length);
      const outcomes = [];
      for (const a of deleted) outcomes.push(await outcome(() => store.deleteArtifact('fill', a.id)));
      const sizes = deleted.map((a) => a.size);
      return { outcomes, sizes, bytes: sizes.reduce((sum, size) => sum + size, 0), count: deleted.length };
    };
    const purge = async () => {
      try {
        return await store.purgeWorkflows(now + 1, 100);
      } catch (error) {
        return error.code;
      }
    };
    // What was deleted, written again: the artifacts, then the purged workflows' events.
    const writeAgain = async (sizes, prefix) => {
      const outcomes = [];
      for (const [i, size] of sizes.entries()) outcomes.push(await outcome(() => put(size, prefix)(i)));
      for (let w = 0; w < 4; w++) outcomes.push(await outcome(() => store.append(`${prefix}-${w}`, bulk(w), 0)));
      return outcomes;
    };

    const inSession = { deleted: await deleteAll(), purged: await purge() };
    inSession.stats = await store.storageStats();
    inSession.usageAfterDelete = await usage();
    inSession.again = await writeAgain(inSession.deleted.sizes, 'again');
    inSession.vacuum = await outcome(() => store.vacuum());
    inSession.statsAfterVacuum = await store.storageStats();

    // The same across a reopen: the origin's usage goes down by what was deleted.
    const acrossReopen = { usageBefore: await usage(), deleted: await deleteAll(), purged: await purge() };
    await reopen();
    acrossReopen.usageReopened = await usage();
    acrossReopen.again = await writeAgain(acrossReopen.deleted.sizes, 'reopened');
    acrossReopen.usageAfter = await usage();

    await reopen();
    const afterReopen = await readBack(acknowledged);
    const listed = [];
    let cursor = null;
    do {
      const page = await store.listArtifacts('fill', { limit: 7, cursor });
      listed.push(...page.items.map((m) => m.artifactId));
      cursor = page.nextCursor;
    } while (cursor);
    const workflows = (await store.listWorkflowIds()).items;
    await store.close();
    return {
      refusals, readsWhileFull, firstDelete, full, filled, inSession, acrossReopen, afterReopen, workflows,
      listed: listed.length, unique: new Set(listed).size, written: acknowledged.length, logged: head,
    };
  });
  const { inSession, acrossReopen } = report;
  const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  const written = (outcomes) => `${outcomes.filter((o) => o === 'ok').length} of ${outcomes.length} writes ok`;
  console.log(
    `[storage-full] ${report.filled} artifacts acknowledged before STORAGE_FULL; origin usage ${report.full} B (${mib(report.full)}) when full.\n` +
      `  In one session: deleted ${inSession.deleted.count} artifacts (${inSession.deleted.bytes} B) and purged ${inSession.purged.events} events (3.2 MB): ` +
      `usage ${inSession.usageAfterDelete} B (Chrome counts what open files were given until they close), ` +
      `database ${inSession.stats.pageCount} pages of ${inSession.stats.pageSize} B, ${inSession.stats.freelistCount} free; ` +
      `all of it written again: ${written(inSession.again)}; vacuum: ${inSession.vacuum}.\n` +
      `  Across a reopen: usage ${acrossReopen.usageBefore} B; after deleting ${acrossReopen.deleted.bytes} B of artifacts, purging ` +
      `${acrossReopen.purged.events} events and reopening ${acrossReopen.usageReopened} B (${mib(acrossReopen.usageReopened)}); ` +
      `all of it written again: ${written(acrossReopen.again)}, usage then ${acrossReopen.usageAfter} B`,
  );
  assert.equal(report.firstDelete, true);
  assert.deepEqual(report.refusals.map((r) => r.code), Array(4).fill('STORAGE_FULL'));
  assert.ok(report.refusals.every((r) => r.isError));
  assert.equal(report.readsWhileFull, 'ok');
  for (const phase of [inSession, acrossReopen]) {
    assert.ok(phase.deleted.bytes >= 2 ** 20, `${phase.deleted.bytes} B of artifacts`);
    assert.deepEqual(phase.deleted.outcomes, Array(phase.deleted.count).fill('ok'));
    assert.equal(phase.purged.workflows, 4, JSON.stringify(phase.purged));
    assert.equal(phase.purged.events, 24);
    // Everything deleted is written again.
    assert.deepEqual(phase.again, Array(phase.deleted.count + 4).fill('ok'));
  }
  // Every freed page went back to the file system, and the store still compacts itself.
  assert.equal(inSession.stats.freelistCount, 0, JSON.stringify(inSession.stats));
  assert.equal(inSession.vacuum, 'ok');
  assert.equal(inSession.statsAfterVacuum.freelistCount, 0);
  // Once the files were closed, the origin's usage is down by what was deleted.
  assert.ok(acrossReopen.usageReopened < acrossReopen.usageBefore - acrossReopen.deleted.bytes,
    `usage ${acrossReopen.usageBefore} before deleting ${acrossReopen.deleted.bytes} B, ${acrossReopen.usageReopened} reopened`);
  assert.equal(report.afterReopen, 'ok');
  assert.equal(report.listed, report.written);
  assert.equal(report.unique, report.written);
  // The purges took the closed workflows and left the open one (which has events only if a
  // small append still fitted: each write also records its request id).
  const rewritten = [0, 1, 2, 3].map((w) => `reopened-${w}`);
  assert.deepEqual(report.workflows, report.logged > 0 ? ['log', ...rewritten] : rewritten);
  await page.close();
});
