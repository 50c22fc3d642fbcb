// What `npm pack` puts in the package: its licenses, README, types, JS and wasm, and nothing
// else (no tests, sources, demo or docs); every entry of `exports` and its types there; the
// README's links working from the npm page, where only the tarball is; and runstore/langgraph
// without its optional peer saying what to install.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** The paths `npm pack` would put in the tarball, as npm lists them. */
async function packed() {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root });
  const [{ files }] = JSON.parse(stdout);
  return files.map(({ path }) => path);
}

const files = await packed();

test('the tarball holds the licenses, the README, the types, the JS and the wasm', () => {
  for (const path of [
    'LICENSE-MIT',
    'LICENSE-APACHE',
    'README.md',
    'package.json',
    'js/index.js',
    'js/index.d.ts',
    'js/types.d.ts',
    'js/core.d.ts',
    'js/langgraph.d.ts',
    'js/worker.js',
    'pkg/runstore.js',
    'pkg/runstore.d.ts',
    'pkg/runstore_bg.wasm',
  ]) {
    assert.ok(files.includes(path), `${path} is not packed`);
  }
});

test('the tarball holds nothing else: no tests, sources, demo, docs or build output', () => {
  const allowed = /^(js\/[\w.-]+\.(js|d\.ts)|pkg\/(runstore(_bg)?\.(js|d\.ts|wasm|wasm\.d\.ts)|snippets\/.+\.js)|README\.md|LICENSE-(MIT|APACHE)|package\.json)$/;
  const stray = files.filter((path) => !allowed.test(path) || /\.test\.|\.spec\./.test(path));
  assert.deepEqual(stray, []);
});

test('every entry of exports, and its types, is in the tarball', () => {
  const targets = [manifest.main, manifest.types];
  const collect = (entry) => {
    if (typeof entry === 'string') targets.push(entry);
    else for (const value of Object.values(entry)) collect(value);
  };
  collect(manifest.exports);
  for (const target of targets) {
    assert.ok(files.includes(target.replace(/^\.\//, '')), `${target} is named by package.json but not packed`);
  }
});

test('the licenses are the declared ones, and package.json says where the project lives and what Node it takes', () => {
  assert.equal(manifest.license, 'MIT OR Apache-2.0');
  assert.match(readFileSync(join(root, 'LICENSE-MIT'), 'utf8'), /^MIT License\n\nCopyright \(c\) The runstore authors\n/);
  assert.match(readFileSync(join(root, 'LICENSE-APACHE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
  assert.match(manifest.repository.url, /github\.com\/runstore\/runstore/);
  assert.match(manifest.homepage, /^https:\/\/github\.com\/runstore\/runstore/);
  assert.match(manifest.bugs.url, /^https:\/\/github\.com\/runstore\/runstore\/issues/);
  assert.equal(manifest.engines.node, '>=20');
});

test("the README's links and images work from the npm page, where the repository's files are not: absolute ones", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const targets = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((match) => match[1]);
  assert.ok(targets.length > 0);
  assert.deepEqual(targets.filter((target) => !/^(https:|mailto:|#)/.test(target)), []);
  // A docs page named in passing is a link too.
  assert.deepEqual(readme.match(/`docs\/[\w.-]+`/g) ?? [], []);
});

test('runstore/langgraph without @langchain/langgraph-checkpoint says what to install', async () => {
  // A project with the packed package and nothing else, outside this checkout.
  const app = mkdtempSync(join(tmpdir(), 'runstore-no-peer-'));
  try {
    const { stdout: tarball } = await run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', app], { cwd: root });
    mkdirSync(join(app, 'node_modules', 'runstore'), { recursive: true });
    await run('tar', ['xzf', join(app, tarball.trim()), '-C', join(app, 'node_modules', 'runstore'), '--strip-components=1']);
    const load = (entry) =>
      run(process.execPath, ['-e', `import('${entry}').then(() => console.log('loaded'), (error) => console.log(error.message))`], { cwd: app });
    const { stdout } = await load('runstore/langgraph');
    assert.match(stdout, /^runstore\/langgraph needs the package @langchain\/langgraph-checkpoint, which is not installed: npm install @langchain\/langgraph-checkpoint /);
    // The main entries never load the peer.
    assert.equal((await load('runstore')).stdout.trim(), 'loaded');
    assert.equal((await load('runstore/core')).stdout.trim(), 'loaded');
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
});
