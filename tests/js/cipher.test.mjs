// Encryption at rest through the package as an app uses it: in a browser (the test app, built
// with Vite, in RUNSTORE_ENGINE's engine) on OPFS and IndexedDB, and with RUNSTORE_HOST=node in
// a file. After known text is written, no stored byte holds it (OPFS files, IndexedDB's
// records, the file and its WAL); a wrong key, a missing key and a key given to a plain store
// are WRONG_KEY and leave every stored byte as it was; rekey, reopen; an export stays
// encrypted unless asked for a plain one; a tab that joins a shared store with another key is
// WRONG_KEY. A plain store beside each proves that the search finds the text when it is there.
// A plain store encrypted in place by rekey, with progress (from a follower tab too), keeps
// none of its text stored; a worker terminated midway through it leaves a whole store.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE, useTestApp } from './browser.mjs';

const IN_NODE = process.env.RUNSTORE_HOST === 'node';
const app = IN_NODE ? null : useTestApp();
const SECRET = 'patient-record-7f3a9c-diagnosis';
const KEY = Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256);
/** The media a store is encrypted on here: WebKitGTK's OPFS lacks sync access handles. */
const MEDIA = IN_NODE ? ['file'] : ENGINE === 'webkit' ? ['indexeddb'] : ['opfs', 'indexeddb'];

let directory;
if (IN_NODE) {
  directory = mkdtempSync(join(tmpdir(), 'runstore-cipher-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
}

/**
 * Runs `body(helpers, arg)` where the package runs: in a fresh page of the test app (from its
 * source text; `arg` and the result cross as JSON), or in this process.
 */
async function inHost(body, arg) {
  if (IN_NODE) {
    const { runstore } = await import('../app/src/node.js');
    return body({ open: (name, options) => runstore.RunStore.open(name, options), stored: storedInNode }, arg);
  }
  const page = await app.browser.newPage();
  try {
    await page.goto(app.url);
    await page.waitForFunction(() => window.runstore !== undefined);
    return await page.evaluate(`(async () => {
      const stored = ${storedInPage};
      const helpers = { open: window.runstore.openAsGiven, stored };
      return (${body})(helpers, ${JSON.stringify(arg)});
    })()`);
  } finally {
    await page.close();
  }
}

/** What a store keeps on disk in Node: its file, WAL and journal, hashed and searched. */
async function storedInNode(name, secret) {
  const files = readdirSync(directory).filter((file) => file.startsWith(`${name}.db`) && !file.endsWith('.lock')).sort();
  const bytes = Buffer.concat(files.map((file) => readFileSync(join(directory, file))));
  return { size: bytes.length, digest: createHash('sha256').update(bytes).digest('hex'), holds: bytes.includes(secret) };
}

/**
 * What a store keeps in the page's origin: the files of its OPFS directory, or every key and
 * value of its IndexedDB database, hashed together and searched for `secret`.
 */
async function storedInPage(name, secret) {
  const parts = [];
  // WebKitGTK's pages have no OPFS: their stores are in IndexedDB.
  const root = await navigator.storage?.getDirectory?.().catch(() => null);
  const walk = async (dir, inside) => {
    for await (const [entry, handle] of dir.entries()) {
      if (handle.kind === 'directory') await walk(handle, inside || entry === name);
      else if (inside) parts.push(new Uint8Array(await (await handle.getFile()).arrayBuffer()));
    }
  };
  if (root) await walk(root, false);
  const known = (await indexedDB.databases?.()) ?? [];
  if (known.some((db) => db.name === `runstore:${name}`)) {
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open(`runstore:${name}`);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const collect = (value) => {
      if (value instanceof ArrayBuffer) parts.push(new Uint8Array(value));
      else if (ArrayBuffer.isView(value)) parts.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      else if (typeof value === 'string') parts.push(new TextEncoder().encode(value));
      else if (value && typeof value === 'object') for (const inner of Object.values(value)) collect(inner);
    };
    for (const storeName of db.objectStoreNames) {
      const rows = await new Promise((resolve, reject) => {
        const request = db.transaction(storeName).objectStore(storeName).getAll();
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      collect(rows);
    }
    db.close();
  }
  const size = parts.reduce((sum, part) => sum + part.length, 0);
  const all = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  const needle = new TextEncoder().encode(secret);
  let holds = false;
  for (let i = 0; i + needle.length <= all.length && !holds; i++) {
    holds = needle.every((byte, j) => all[i + j] === byte);
  }
  const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', all)), (b) => b.toString(16).padStart(2, '0')).join('');
  return { size, digest, holds };
}

function mediumOptions(medium) {
  return medium === 'file' ? { persistence: 'file', directory } : { persistence: medium };
}

for (const medium of MEDIA) {
  test(`${ENGINE === 'chromium' || IN_NODE ? '' : `${ENGINE}: `}${medium}: no stored byte holds an encrypted store's text; wrong, missing and unexpected keys are WRONG_KEY and change nothing`, async () => {
    const got = await inHost(async ({ open, stored }, { secret, keyBytes, options, tag }) => {
      const key = new Uint8Array(keyBytes);
      const event = { type: 'custom', name: 'noted', recordedAt: 1, data: { note: secret } };
      const code = (promise) => promise.then(async (store) => (await store.close(), 'opened'), (error) => error.code);
      const plain = await open(`plain-${tag}`, { ...options, exclusive: true });
      await plain.append('wf', [event], 0);
      await plain.close();
      const sealed = await open(`sealed-${tag}`, { ...options, key, exclusive: true });
      await sealed.append('wf', [event], 0);
      const encryptedExport = await sealed.exportDatabase();
      const plainExport = await sealed.exportDatabase({ plain: true });
      await sealed.close();
      const before = { plain: await stored(`plain-${tag}`, secret), sealed: await stored(`sealed-${tag}`, secret) };
      const refusals = {
        wrongKey: await code(open(`sealed-${tag}`, { ...options, key: key.map((b) => b ^ 1), exclusive: true })),
        passphrase: await code(open(`sealed-${tag}`, { ...options, key: 'not the key', exclusive: true })),
        noKey: await code(open(`sealed-${tag}`, { ...options, exclusive: true })),
        keyForPlain: await code(open(`plain-${tag}`, { ...options, key, exclusive: true })),
        shortKey: await open(`sealed-${tag}`, { ...options, key: key.slice(1), exclusive: true }).then(() => 'opened', (error) => `${error.code} ${error.field}`),
      };
      const afterRefusals = { plain: await stored(`plain-${tag}`, secret), sealed: await stored(`sealed-${tag}`, secret) };
      const holds = (bytes) => new TextDecoder('latin1').decode(bytes).includes(secret);
      // Rekey to a passphrase: the old key no longer opens it, the new one does.
      const again = await open(`sealed-${tag}`, { ...options, key, exclusive: true });
      const head = await again.head('wf');
      await again.rekey('a new passphrase');
      await again.close();
      const oldKey = await code(open(`sealed-${tag}`, { ...options, key, exclusive: true }));
      const rekeyed = await open(`sealed-${tag}`, { ...options, key: 'a new passphrase', exclusive: true });
      const headAfterRekey = await rekeyed.head('wf');
      // The store's own export was made with the old key: a store with another key refuses it.
      const importWithOtherKey = await rekeyed.importDatabase(encryptedExport).then(() => 'imported', (error) => error.code);
      const importPlain = await rekeyed.importDatabase(plainExport).then(() => 'imported', (error) => error.code);
      await rekeyed.close();
      const afterRekey = await stored(`sealed-${tag}`, secret);
      return {
        before,
        afterRefusals,
        refusals,
        head,
        oldKey,
        headAfterRekey,
        exports: { encrypted: holds(encryptedExport), plain: holds(plainExport) },
        importWithOtherKey,
        importPlain,
        afterRekey,
      };
    }, { secret: SECRET, keyBytes: KEY, options: mediumOptions(medium), tag: `${medium}-${Date.now()}` });

    assert.ok(got.before.plain.holds, `the plain store's ${medium} storage holds the text: the search works`);
    assert.ok(got.before.sealed.size > 0, 'the encrypted store is stored');
    assert.equal(got.before.sealed.holds, false, `the encrypted store's ${medium} storage holds the text`);
    assert.deepEqual(got.refusals, { wrongKey: 'WRONG_KEY', passphrase: 'WRONG_KEY', noKey: 'WRONG_KEY', keyForPlain: 'WRONG_KEY', shortKey: 'INVALID_INPUT options.key' });
    assert.deepEqual(got.afterRefusals, got.before, 'refused opens leave every stored byte as it was');
    assert.equal(got.head, 1);
    assert.equal(got.oldKey, 'WRONG_KEY');
    assert.equal(got.headAfterRekey, 1);
    assert.deepEqual(got.exports, { encrypted: false, plain: true });
    assert.equal(got.importWithOtherKey, 'WRONG_KEY');
    assert.equal(got.importPlain, 'imported');
    assert.equal(got.afterRekey.holds, false, 'after rekey and a plain import the store is still encrypted');
  });
}

for (const medium of MEDIA) {
  test(`${ENGINE === 'chromium' || IN_NODE ? '' : `${ENGINE}: `}${medium}: rekey encrypts a plain store in place, with progress, and nothing of its text stays stored`, async () => {
    const got = await inHost(async ({ open, stored }, { secret, keyBytes, options, tag, workflows }) => {
      const key = new Uint8Array(keyBytes);
      const name = `encrypted-later-${tag}`;
      const plain = await open(name, { ...options, exclusive: true });
      for (let n = 0; n < workflows; n++) {
        await plain.append(`wf-${n}`, [{ type: 'custom', name: 'noted', recordedAt: 1, data: { note: `${secret}-${n}` } }], 0);
      }
      const before = await stored(name, secret);
      const reports = [];
      await plain.rekey(key, { onProgress: (progress) => reports.push(progress) });
      const headAfter = await plain.head(`wf-${workflows - 1}`);
      await plain.close();
      const after = await stored(name, secret);
      const code = (promise) => promise.then(async (store) => (await store.close(), 'opened'), (error) => error.code);
      const noKey = await code(open(name, { ...options, exclusive: true }));
      const reopened = await open(name, { ...options, key, exclusive: true });
      const heads = [await reopened.head('wf-0'), await reopened.head(`wf-${workflows - 1}`)];
      await reopened.close();
      return { before, after, reports, headAfter, noKey, heads };
    }, { secret: SECRET, keyBytes: KEY, options: mediumOptions(medium), tag: `${medium}-${Date.now()}`, workflows: 300 });

    assert.ok(got.before.holds, 'the plain store holds its text: the search works');
    assert.equal(got.after.holds, false, `after rekey the ${medium} storage holds none of the text`);
    assert.ok(got.reports.length >= 4, `progress was reported as rows were copied: ${JSON.stringify(got.reports)}`);
    assert.ok(got.reports.every((r, i) => i === 0 || r.done > got.reports[i - 1].done), 'progress only grows');
    const last = got.reports.at(-1);
    assert.equal(last.done, last.total, 'progress ends at its total');
    assert.ok(last.total >= 2 * 300, `both copies count every event: ${JSON.stringify(last)}`);
    assert.equal(got.headAfter, 1, 'the store goes on, encrypted');
    assert.equal(got.noKey, 'WRONG_KEY');
    assert.deepEqual(got.heads, [1, 1]);
  });
}

for (const medium of IN_NODE ? [] : MEDIA) {
  test(`${ENGINE === 'chromium' ? '' : `${ENGINE}: `}${medium}: a worker terminated midway through encrypting a store loses nothing`, async (t) => {
    const page = await app.browser.newPage();
    let report;
    try {
      await page.goto(app.url);
      await page.waitForFunction(() => window.runEncryptionKilled !== undefined);
      report = await page.evaluate((arg) => window.runEncryptionKilled(arg), {
        medium, keyBytes: KEY, workflows: 3000, points: [0.05, 0.3, 0.55, 0.8, 0.98],
      });
    } finally {
      await page.close();
    }
    assert.equal(report.failed, undefined, report.failed);
    t.diagnostic(report.results.map((r) => `${r.point}: ${r.stopped?.done ?? 'finished'} of ${r.stopped?.total ?? ''}, ${r.withoutKey.heads ? 'plain' : 'encrypted'}`).join('; '));
    for (const result of report.results) {
      const at = `terminated at ${JSON.stringify(result.stopped)} (point ${result.point})`;
      const { withoutKey, withKey } = result;
      if (withoutKey.heads) {
        assert.deepEqual(withoutKey.heads, [1, 1], `${at}: the plain store is whole`);
      } else {
        assert.equal(withoutKey.code, 'WRONG_KEY', `${at}: ${JSON.stringify(withoutKey)}`);
        assert.deepEqual(withKey?.heads, [1, 1], `${at}: the encrypted store is whole: ${JSON.stringify(withKey)}`);
      }
      // On OPFS the second copy's reports come after the plain file was deleted: the store is
      // encrypted from then on. On IndexedDB nothing of a call is stored before it returns.
      if (medium === 'opfs' && result.point > 0.5) assert.ok(!withoutKey.heads, `${at}: past the delete the store needs its key`);
      if (medium === 'indexeddb' && result.point < 0.6) assert.ok(withoutKey.heads, `${at}: IndexedDB kept the plain store`);
    }
  });
}

test('a tab that joins a shared encrypted store with another key gets WRONG_KEY; with the key it reads', { skip: IN_NODE && 'needs a browser: tabs' }, async () => {
  const leader = await app.browser.newPage();
  const pages = [leader];
  try {
    await leader.goto(app.url);
    await leader.waitForFunction(() => window.runstore !== undefined);
    const name = `shared-sealed-${Date.now()}`;
    const persistence = ENGINE === 'webkit' ? 'indexeddb' : 'opfs';
    await leader.evaluate(async ({ name, persistence, keyBytes }) => {
      window.shared = await window.runstore.openAsGiven(name, { persistence, key: new Uint8Array(keyBytes) });
      await window.shared.append('wf', [{ type: 'custom', name: 'kept', recordedAt: 1 }], 0);
    }, { name, persistence, keyBytes: KEY });
    const joins = {};
    for (const [label, key] of [['otherKey', KEY.map((b) => b ^ 0xff)], ['noKey', null], ['sameKey', KEY]]) {
      const page = await app.browser.newPage();
      pages.push(page);
      await page.goto(app.url);
      await page.waitForFunction(() => window.runstore !== undefined);
      joins[label] = await page.evaluate(async ({ name, persistence, key }) => {
        const options = key ? { persistence, key: new Uint8Array(key) } : { persistence };
        try {
          window.joined = await window.runstore.openAsGiven(name, options);
          return { head: await window.joined.head('wf') };
        } catch (error) {
          return { code: error.code };
        }
      }, { name, persistence, key });
    }
    assert.deepEqual(joins, { otherKey: { code: 'WRONG_KEY' }, noKey: { code: 'WRONG_KEY' }, sameKey: { head: 1 } });
    // After a rekey the leader serves only tabs that show the new key: the tab it admitted with
    // the old one is refused at its next call, a tab opening with the new one reads.
    await leader.evaluate(async () => window.shared.rekey('the new passphrase'));
    const admittedBefore = pages[pages.length - 1];
    const oldTab = await admittedBefore.evaluate(async () =>
      window.joined.head('wf').then((head) => ({ head }), (error) => ({ code: error.code })),
    );
    const newTab = await app.browser.newPage();
    pages.push(newTab);
    await newTab.goto(app.url);
    await newTab.waitForFunction(() => window.runstore !== undefined);
    const withNewKey = await newTab.evaluate(async ({ name, persistence }) => {
      const store = await window.runstore.openAsGiven(name, { persistence, key: 'the new passphrase' });
      return { head: await store.head('wf') };
    }, { name, persistence });
    assert.deepEqual({ oldTab, withNewKey }, { oldTab: { code: 'WRONG_KEY' }, withNewKey: { head: 1 } });
  } finally {
    for (const page of pages) await page.close();
  }
});

test("a follower tab encrypts a shared plain store through the leader's worker and hears its progress", { skip: IN_NODE && 'needs a browser: tabs' }, async () => {
  const pages = [];
  const newPage = async () => {
    const page = await app.browser.newPage();
    pages.push(page);
    await page.goto(app.url);
    await page.waitForFunction(() => window.runstore !== undefined);
    return page;
  };
  try {
    const name = `shared-encrypted-later-${Date.now()}`;
    const persistence = ENGINE === 'webkit' ? 'indexeddb' : 'opfs';
    const leader = await newPage();
    await leader.evaluate(async ({ name, persistence }) => {
      window.shared = await window.runstore.openAsGiven(name, { persistence });
      for (let n = 0; n < 50; n++) await window.shared.append(`wf-${n}`, [{ type: 'custom', name: 'kept', recordedAt: 1 }], 0);
    }, { name, persistence });
    const follower = await newPage();
    const followed = await follower.evaluate(async ({ name, persistence, keyBytes }) => {
      const store = await window.runstore.openAsGiven(name, { persistence });
      const leads = store.isLeader;
      const reports = [];
      await store.rekey(new Uint8Array(keyBytes), { onProgress: (progress) => reports.push(progress) });
      return { leads, reports };
    }, { name, persistence, keyBytes: KEY });
    const opens = {};
    for (const [label, key] of [['withKey', KEY], ['withoutKey', null]]) {
      const page = await newPage();
      opens[label] = await page.evaluate(async ({ name, persistence, key }) => {
        const options = key ? { persistence, key: new Uint8Array(key) } : { persistence };
        return window.runstore.openAsGiven(name, options).then(
          async (store) => ({ head: await store.head('wf-49') }),
          (error) => ({ code: error.code }),
        );
      }, { name, persistence, key });
    }
    assert.equal(followed.leads, false, 'the tab that encrypts is a follower');
    assert.ok(followed.reports.length > 0, 'its progress reached it');
    const last = followed.reports.at(-1);
    assert.equal(last.done, last.total);
    assert.ok(last.total >= 100, JSON.stringify(last));
    assert.deepEqual(opens, { withKey: { head: 1 }, withoutKey: { code: 'WRONG_KEY' } });
  } finally {
    for (const page of pages) await page.close();
  }
});

test('a key for a store that would live in memory is INVALID_INPUT, not a store that exports in plain', async () => {
  const got = await inHost(async ({ open }, { keyBytes, inNode }) => {
    const outcome = (options) => open(`memory-key-${Date.now()}`, options).then(
      async (store) => (await store.close(), 'opened'),
      (error) => `${error.code} ${error.field}`,
    );
    const key = new Uint8Array(keyBytes);
    return {
      memory: await outcome({ persistence: 'memory', key }),
      // In Node `auto` without a directory falls back to memory.
      auto: inNode ? await outcome({ key }) : 'not here',
      passphraseWithNul: await outcome({ persistence: inNode ? 'memory' : 'opfs', key: 'a\u0000b' }),
    };
  }, { keyBytes: KEY, inNode: IN_NODE });
  assert.deepEqual(got, {
    memory: 'INVALID_INPUT options.key',
    auto: IN_NODE ? 'INVALID_INPUT options.key' : 'not here',
    passphraseWithNul: 'INVALID_INPUT options.key',
  });
});

test("docs/encryption.md's example runs and prints what it says", { skip: IN_NODE && "needs a browser: the example's store is persistent" }, async () => {
  const page = await app.browser.newPage();
  try {
    const printed = [];
    page.on('console', (message) => {
      if (message.type() === 'log') printed.push(message.text());
    });
    await page.goto(app.url);
    await page.waitForFunction(() => window.runstore !== undefined);
    const expected = await page.evaluate(async () => {
      await window.runstore.encryption.example();
      return window.runstore.encryption.expected;
    });
    assert.deepEqual(expected, ['WRONG_KEY', '1']);
    assert.deepEqual(printed, expected);
  } finally {
    await page.close();
  }
});
