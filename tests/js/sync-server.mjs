// Test support: the runstore-sync binary (RUNSTORE_SYNC_BIN, built by scripts/test-sync.sh) on
// a given port, on PostgreSQL when RUNSTORE_PG_URL names a database, else on a SQLite file.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The server's settings: the same store for every start, so a restart keeps its data.
 * @param {Record<string, string[]>} grants token → namespaces
 * @param {string} [schema] the PostgreSQL schema, for several stores in one test process
 */
export function syncServerSettings(port, grants, schema = `sync_e2e_${process.pid}`) {
  const store = process.env.RUNSTORE_PG_URL
    ? { RUNSTORE_SYNC_POSTGRES: process.env.RUNSTORE_PG_URL, RUNSTORE_SYNC_PG_SCHEMA: schema }
    : { RUNSTORE_SYNC_SQLITE: join(mkdtempSync(join(tmpdir(), 'runstore-sync-')), 'server.db') };
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    backend: process.env.RUNSTORE_PG_URL ? 'PostgreSQL' : 'SQLite',
    env: { ...store, RUNSTORE_SYNC_TOKENS: JSON.stringify(grants), RUNSTORE_SYNC_LISTEN: `127.0.0.1:${port}` },
  };
}

/** Starts the server; resolves once it listens, to { process, stop(signal) }. */
export async function startSyncServer(settings) {
  const bin = process.env.RUNSTORE_SYNC_BIN;
  if (!bin) throw new Error('set RUNSTORE_SYNC_BIN to the runstore-sync binary (scripts/test-sync.sh does)');
  const child = spawn(bin, [], { env: { ...process.env, ...settings.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr.on('data', (chunk) => {
    errors += chunk;
  });
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('listening on')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`runstore-sync exited with ${code}: ${errors}`)));
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return {
    process: child,
    /** Stops it (SIGKILL: as a crash would) and resolves once it is gone. */
    async stop(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * The sync servers of a checker: two processes on one PostgreSQL schema (RUNSTORE_PG_URL), or
 * one on a SQLite file (SQLite allows one process per file). Each `{ settings, running }`.
 */
export async function startSyncServers(grants, schema) {
  const servers = [];
  for (let i = 0; i < 2; i += 1) {
    const settings = syncServerSettings(await freePort(), grants, schema);
    servers.push({ settings, running: await startSyncServer(settings) });
    if (!process.env.RUNSTORE_PG_URL) break;
  }
  return servers;
}

/** A pseudo-random sequence from a seed (mulberry32), so a failing checker run can be repeated. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
