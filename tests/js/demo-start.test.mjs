// `npm start` as a newcomer meets it: the URL is printed only once the page is served, and a
// second `npm start` (another PORT while one runs, or a port another program holds) says
// plainly why it cannot start and what to do, without printing a URL of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

function start(port) {
  const child = spawn('bash', ['scripts/demo.sh'], { cwd: root, env: { ...process.env, PORT: String(port) }, detached: true });
  child.output = '';
  child.stdout.on('data', (chunk) => (child.output += chunk));
  child.stderr.on('data', (chunk) => (child.output += chunk));
  child.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return child;
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('npm start prints the URL once the page is served; a second one says why it cannot start', { timeout: 240_000 }, async () => {
  const [first, second, taken] = [await freePort(), await freePort(), await freePort()];
  const demo = start(first);
  try {
    const url = `http://127.0.0.1:${first}/`;
    // At the moment the URL appears, the page must answer.
    for (;;) {
      if (demo.output.includes(`runstore demo: ${url}`)) break;
      const code = await Promise.race([demo.exited, new Promise((resolve) => setTimeout(resolve, 20, 'running'))]);
      assert.equal(code, 'running', `npm start ended before serving:\n${demo.output}`);
    }
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /runstore/);

    const again = start(second);
    assert.equal(await again.exited, 1, again.output);
    assert.doesNotMatch(again.output, /runstore demo: http/);
    assert.match(again.output, /Cannot start the demo: another `npm start` of this checkout is serving it already/);
    assert.ok(again.output.includes(url), again.output);
    // The first one still serves the page.
    assert.equal((await fetch(url)).status, 200);
  } finally {
    process.kill(-demo.pid, 'SIGINT');
    await demo.exited;
  }

  const holder = createServer();
  await new Promise((resolve) => holder.listen(taken, '127.0.0.1', resolve));
  try {
    const blocked = start(taken);
    assert.equal(await blocked.exited, 1, blocked.output);
    assert.doesNotMatch(blocked.output, /runstore demo: http/);
    assert.match(blocked.output, new RegExp(`port ${taken} is in use.*PORT=8080 npm start`));
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});
