// A full origin: with the origin's quota lowered (Chromium: through the DevTools protocol;
// Firefox: its quota manager's pref; WebKit offers no way, so it does not run there), writes past it
// fail with STORAGE_FULL (not BACKEND, not a trap), every acknowledged write stays readable,
// deleting and purging work while full and give the space back, and writes work again, also
// after a reopen. Run by scripts/test-js.sh after the app is built.
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
    const store = await RunStore.open('full-origin', { persistence: 'opfs' });
    const now = Date.now();
    // Closed workflows with large events, for the purge.
    const text = 'x'.repeat(200_000);
    for (let w = 0; w < 4; w++) {
      const events = [{ type: 'started', workflowType: 'bulk', runId: `r${w}`, recordedAt: now }];
      for (let i = 0; i < 4; i++) events.push({ type: 'custom', name: 'chunk', recordedAt: now, data: { text } });
      events.push({ type: 'completed', recordedAt: now });
      await store.append(`bulk-${w}`, events, 0);
    }
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
    const full = await usage();
    const filled = acknowledged.length;

    // Reads work while full, and everything acknowledged is there.
    const readBack = async (s, list) => {
      for (const a of list) {
        const artifact = await s.getArtifact('fill', a.id); // verifies the digest
        if (artifact.bytes.length !== a.size || artifact.bytes[a.size - 1] !== a.fill) return `artifact ${a.id} differs`;
      }
      const log = (await s.readHistory('log', { limit: 10_000 })).items;
      if (log.length !== head || log.some((e, i) => e.data.n !== i)) return `log has ${log.length} of ${head}`;
      return 'ok';
    };
    const readsWhileFull = await readBack(store, acknowledged);

    // Delete and purge while full.
    const deleted = acknowledged.filter((a) => a.size === 1 << 20);
    const deletes = [];
    for (const a of deleted) {
      try {
        deletes.push(await store.deleteArtifact('fill', a.id));
      } catch (error) {
        deletes.push(error.code);
      }
    }
    let purged;
    try {
      purged = await store.purgeWorkflows(now + 1, 100);
    } catch (error) {
      purged = error.code;
    }
    const kept = acknowledged.filter((a) => !deleted.includes(a));
    const afterDelete = await usage();

    // Writes work again.
    const again = [];
    for (let i = 0; i < 3; i++) {
      try {
        await put(1 << 20, 'again')(i);
        again.push('ok');
      } catch (error) {
        again.push(error.code);
      }
    }
    const written = acknowledged.filter((a) => !deleted.includes(a));
    await store.close();

    const reopened = await RunStore.open('full-origin', { persistence: 'opfs' });
    const afterReopen = await readBack(reopened, written);
    const listed = [];
    let cursor = null;
    do {
      const page = await reopened.listArtifacts('fill', { limit: 7, cursor });
      listed.push(...page.items.map((m) => m.artifactId));
      cursor = page.nextCursor;
    } while (cursor);
    const workflows = (await reopened.listWorkflowIds()).items;
    const reopenedUsage = await usage();
    await reopened.close();
    return {
      refusals, readsWhileFull, deletes, purged, again, afterReopen, workflows,
      acknowledged: acknowledged.length, kept: kept.length, listed: listed.length,
      unique: new Set(listed).size, written: written.length, full, afterDelete, reopenedUsage,
      deletedCount: deleted.length, filled, logged: head,
    };
  });
  const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  console.log(
    `[storage-full] ${report.filled} artifacts acknowledged before STORAGE_FULL; origin usage ${mib(report.full)} when full, ` +
      `${mib(report.afterDelete)} after deleting ${report.deletedCount} MiB of artifacts and purging 3.2 MB of events, ` +
      `${mib(report.reopenedUsage)} after a reopen`,
  );
  assert.deepEqual(report.refusals.map((r) => r.code), ['STORAGE_FULL', 'STORAGE_FULL', 'STORAGE_FULL']);
  assert.ok(report.refusals.every((r) => r.isError));
  assert.ok(report.deletedCount >= 3, `${report.deletedCount} MiB artifacts before the quota`);
  assert.equal(report.readsWhileFull, 'ok');
  assert.deepEqual(report.deletes, Array(report.deletedCount).fill(true));
  assert.equal(report.purged.workflows, 4, JSON.stringify(report.purged));
  assert.equal(report.purged.events, 24);
  // Chrome keeps an open access handle's allocation until it closes: the space shows once the
  // store has closed its files.
  assert.ok(report.reopenedUsage < report.full - 2 ** 20, `usage ${report.full} when full, ${report.reopenedUsage} reopened`);
  assert.deepEqual(report.again, ['ok', 'ok', 'ok']);
  assert.equal(report.afterReopen, 'ok');
  assert.equal(report.listed, report.written);
  assert.equal(report.unique, report.written);
  // The purge took the closed workflows and left the open one (which has events only if a
  // small append still fitted: each write also records its request id).
  assert.deepEqual(report.workflows, report.logged > 0 ? ['log'] : []);
  await page.close();
});
