// The file medium in Node (`persistence: 'file'`), through the package as an app installs it
// (tests/app's node_modules, the packed tarball): a store that outlives its process, BUSY for a
// second opener, options refused with their field, flushes as `durability` promises, and files
// the native crate reads and writes too (examples/store_file_peer.rs). The package's own cases
// run on this medium too (RUNSTORE_HOST=node RUNSTORE_MEDIUM=file, scripts/test-js.sh); the
// process-kill test is tests/js/node-file-crash.test.mjs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sectionText } from './readme-example.mjs';

const PACKAGE = new URL('../app/node_modules/runstore/', import.meta.url);
const { RunStore } = await import(new URL('js/index.js', PACKAGE));
const { init, RunStoreCore } = await import(new URL('js/core.js', PACKAGE));
const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

const scratch = mkdtempSync(join(tmpdir(), 'runstore-file-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
/** A fresh directory for one test's stores. */
const freshDirectory = () => join(scratch, `case-${++dirs}`);

const event = (name) => ({ type: 'custom', name, recordedAt: 1 });
const outcome = (promise) => promise.then((value) => value, (error) => error);

/** Runs a module in a fresh Node process and answers its stdout. */
async function inProcess(source) {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', source], { timeout: 60_000 });
  return stdout.trim();
}

test('a store in a file outlives its process; its files are the database, its WAL and, while open, the lock', async () => {
  const directory = freshDirectory();
  const store = await RunStore.open('orders', { persistence: 'file', directory });
  assert.equal(store.persistence, 'file');
  assert.equal(await store.append('order-1', [event('placed'), event('paid')], 0), 2);
  assert.deepEqual(readdirSync(directory).sort(), ['orders.db', 'orders.db-wal', 'orders.db.lock']);
  await store.close();
  // Closed: the WAL checkpointed into the database and removed, the lock gone.
  assert.deepEqual(readdirSync(directory), ['orders.db']);
  const read = await inProcess(`
    const { RunStore } = await import(${JSON.stringify(new URL('js/index.js', PACKAGE).href)});
    const store = await RunStore.open('orders', { directory: ${JSON.stringify(directory)} });
    const history = await store.readHistory('order-1');
    console.log(store.persistence, history.items.map((e) => e.name).join(','));
    await store.close();
  `);
  assert.equal(read, 'file placed,paid');
});

test('a second open of a store in a file, in this process or another, is BUSY at once and names the holder', async () => {
  const directory = freshDirectory();
  const held = await RunStore.open('held', { persistence: 'file', directory });
  await init();
  for (const open of [() => RunStore.open('held', { persistence: 'file', directory }), () => RunStoreCore.open('held', { persistence: 'file', directory })]) {
    const started = performance.now();
    const refused = await outcome(open());
    assert.equal(refused.code, 'BUSY', String(refused));
    assert.match(refused.message, /held\.db is open in this process/);
    assert.ok(performance.now() - started < 2_000, 'BUSY at once');
  }
  const elsewhere = await inProcess(`
    const { RunStoreCore, init } = await import(${JSON.stringify(new URL('js/core.js', PACKAGE).href)});
    await init();
    const refused = await RunStoreCore.open('held', { persistence: 'file', directory: ${JSON.stringify(directory)} }).catch((e) => e);
    console.log(refused.code, refused.message.includes('process ${process.pid}'));
  `);
  assert.equal(elsewhere, 'BUSY true');
  await held.close();
  const again = await RunStoreCore.open('held', { persistence: 'file', directory });
  assert.equal(again.head('wf'), 0);
  await again.close();
});

test('the lock of a holder killed but not yet collected by its parent (a zombie) is taken over', { skip: !existsSync('/proc/self/stat') && 'needs /proc' }, async () => {
  const directory = freshDirectory();
  // The holder's parent is a shell that becomes `sleep`, which never collects its children.
  const holder = `
    const { init, RunStoreCore } = await import(${JSON.stringify(new URL('js/core.js', PACKAGE).href)});
    await init();
    await RunStoreCore.open('zombie', { persistence: 'file', directory: ${JSON.stringify(directory)} });
    console.log(process.pid);
    setInterval(() => {}, 1000);
  `;
  const shell = spawn('sh', ['-c', `"${process.execPath}" --input-type=module -e "$HOLDER" & exec sleep 60`], {
    env: { ...process.env, HOLDER: holder },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const pid = Number(await new Promise((resolve) => shell.stdout.once('data', resolve)));
    await init();
    assert.equal((await outcome(RunStoreCore.open('zombie', { persistence: 'file', directory }))).code, 'BUSY');
    process.kill(pid, 'SIGKILL');
    const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0];
    for (let waited = 0; state() !== 'Z'; waited += 10) {
      assert.ok(waited < 5_000, 'the killed holder never became a zombie');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const store = await RunStoreCore.open('zombie', { persistence: 'file', directory });
    assert.equal(store.head('wf'), 0);
    await store.close();
  } finally {
    shell.kill('SIGKILL');
  }
});

test('options of the file medium are checked before anything is created', async () => {
  const directory = freshDirectory();
  const cases = [
    [{ persistence: 'file' }, 'options.directory', /needs a directory/],
    [{ persistence: 'file', directory: '' }, 'options.directory', /non-empty path/],
    [{ persistence: 'memory', directory }, 'options.directory', /goes with persistence 'file'/],
    [{ persistence: 'opfs', directory }, 'options.directory', /goes with persistence 'file'/],
    [{ persistence: 'file', directory: 42 }, 'options.directory', /string/],
  ];
  for (const [options, field, message] of cases) {
    for (const open of [RunStore.open, RunStoreCore.open]) {
      const refused = await outcome(open('checked', options));
      assert.equal(refused.code, 'INVALID_INPUT', `${JSON.stringify(options)}: ${refused}`);
      assert.equal(refused.field, field, JSON.stringify(options));
      assert.match(refused.message, message);
    }
  }
  // A store name is a file name: one that is not a pool name is refused, not a path.
  const escaping = await outcome(RunStore.open('../escape', { persistence: 'file', directory }));
  assert.equal(escaping.field, 'name');
  assert.equal(existsSync(directory), false);
  // Without a directory, 'auto' keeps a store in memory in Node.
  const memory = await RunStore.open('checked');
  assert.equal(memory.persistence, 'memory');
  await memory.close();
});

test("durability 'full': every byte a commit wrote is flushed before it returns (a power cut keeps it); 'relaxed' flushes only at checkpoints", async () => {
  // Node's own fs module, the one the store's file calls go through, watched where it is: the
  // files written since their last flush, and the flushes.
  const fs = process.getBuiltinModule('node:fs');
  const { writeSync, fdatasyncSync } = fs;
  const unflushed = new Set();
  let flushes = 0;
  fs.writeSync = (fd, ...args) => {
    unflushed.add(fd);
    return writeSync.call(fs, fd, ...args);
  };
  fs.fdatasyncSync = (fd) => {
    flushes += 1;
    fdatasyncSync.call(fs, fd);
    unflushed.delete(fd);
  };
  try {
    await init();
    const seen = {};
    for (const durability of ['full', 'relaxed']) {
      const store = await RunStoreCore.open(`flush-${durability}`, { persistence: 'file', directory: freshDirectory(), durability });
      flushes = 0;
      let returnedUnflushed = 0;
      for (let seq = 0; seq < 20; seq++) {
        unflushed.clear();
        store.append('wf', [event(`e${seq}`)], seq);
        if (unflushed.size > 0) returnedUnflushed += 1;
      }
      seen[durability] = { flushes, returnedUnflushed };
      await store.close();
    }
    assert.ok(seen.full.flushes >= 20, `full: ${seen.full.flushes} flushes for 20 commits`);
    assert.equal(seen.full.returnedUnflushed, 0, 'full: a commit returned with bytes not flushed');
    assert.equal(seen.relaxed.flushes, 0, `relaxed: ${seen.relaxed.flushes} flushes for 20 commits`);
    assert.equal(seen.relaxed.returnedUnflushed, 20, 'relaxed: every commit leaves its WAL frames to the next checkpoint');
  } finally {
    Object.assign(fs, { writeSync, fdatasyncSync });
  }
});

test('the native crate opens what Node wrote, and Node what the native crate wrote', async () => {
  await run('cargo', ['build', '--quiet', '--example', 'store_file_peer'], { cwd: root, timeout: 600_000 });
  const peer = (db, workflow, name) =>
    run(join(root, 'target/debug/examples/store_file_peer'), [db, workflow, name]).then(({ stdout }) => stdout.trim());
  const directory = freshDirectory();
  const db = join(directory, 'shared.db');

  const store = await RunStore.open('shared', { persistence: 'file', directory });
  await store.append('wf', [event('from-node')], 0);
  await store.close();
  assert.equal(await peer(db, 'wf', 'from-native'), 'head 1 integrity ok appended 2');
  const reopened = await RunStore.open('shared', { persistence: 'file', directory });
  assert.deepEqual((await reopened.readHistory('wf')).items.map((e) => [e.name, e.data?.by]), [['from-node', undefined], ['from-native', 'native']]);
  await reopened.close();

  // A file the native crate created (its own WAL and shared memory, closed), opened in Node.
  const native = join(directory, 'native.db');
  assert.equal(await peer(native, 'wf', 'first'), 'head 0 integrity ok appended 1');
  const fromNative = await RunStore.open('native', { persistence: 'file', directory });
  assert.equal(await fromNative.append('wf', [event('second')], 1), 2);
  await fromNative.close();
  assert.equal(await peer(native, 'wf', 'third'), 'head 2 integrity ok appended 3');
});

test("docs/node.md's example of a store in a file runs as written, in a project that installed the package", async () => {
  const code = sectionText('docs/node.md#A store in a file').match(/```js\n([\s\S]*?)```/)[1];
  const project = freshDirectory();
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  symlinkSync(fileURLToPath(PACKAGE), join(project, 'node_modules', 'runstore'), 'dir');
  writeFileSync(join(project, 'example.mjs'), code);
  const { stdout } = await run(process.execPath, ['example.mjs'], { cwd: project, timeout: 60_000 });
  const said = [...code.matchAll(/console\.log\(.*\); \/\/ → (.*)$/gm)].map((m) => m[1].trim());
  assert.deepEqual(stdout.trim().split('\n'), said);
  assert.deepEqual(readdirSync(join(project, 'data')), ['orders.db']);
});
