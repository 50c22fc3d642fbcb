// The counting service of the workflow chaos run: a Node HTTP server on loopback that every
// step body calls with its idempotency key. It notes each call (key, attempt, tab, workflow,
// step, when it came and when it was answered) and answers after a short random delay, so
// that calls are in flight when tabs die. The answer is a function of the key alone; the one
// exception is the step named `flaky`, whose first call fails (503), to be retried by the engine.
import { createServer } from 'node:http';

/** The service's answer for `key`: its 32-bit FNV-1a hash. */
export function answer(key) {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(key)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

/** Starts the service on 127.0.0.1; resolves to `{ url, calls, close }` (`calls`: the log, growing). */
export async function startService({ minDelayMs = 10, maxDelayMs = 300 } = {}) {
  const calls = [];
  const seenKeys = new Set();
  const server = createServer((req, res) => {
    // The pages are on another port: a cross-origin caller.
    res.setHeader('access-control-allow-origin', '*');
    if (req.method !== 'POST' || req.url !== '/call') {
      res.writeHead(req.method === 'OPTIONS' ? 204 : 404).end();
      return;
    }
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      let call;
      try {
        const { key, attempt, tab, workflowId, step } = JSON.parse(body);
        call = { key, attempt, tab, workflowId, step, at: Date.now(), answeredAt: null, failed: false };
      } catch {
        res.writeHead(400).end();
        return;
      }
      call.failed = call.step === 'flaky' && !seenKeys.has(call.key);
      seenKeys.add(call.key);
      calls.push(call);
      setTimeout(() => {
        call.answeredAt = Date.now();
        if (call.failed) res.writeHead(503).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value: answer(call.key) }));
      }, minDelayMs + Math.random() * (maxDelayMs - minDelayMs));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    calls,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
