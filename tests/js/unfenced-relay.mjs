// Test support for the sync checker's negative controls (tests/js/sync-controls.test.mjs): an
// HTTP relay in front of the sync server that puts fencing out of force, as a server that
// ignored claim tokens would. It remembers the last claim token each claim answer handed out
// per dispatch key, and rewrites every outbox completion to carry that token, so a completion
// under a replaced token applies. Anything the relay cannot pass on (the connection behind it
// cut) cuts the caller's connection too, as the fault proxy does.
import http from 'node:http';

export class UnfencedRelay {
  #server = null;
  /** dispatch key → the last claim token handed out for it. */
  #tokens = new Map();

  constructor(target) {
    this.target = target;
  }

  /** Starts listening on 127.0.0.1; resolves to the relay's URL. */
  async listen() {
    this.#server = http.createServer((request, response) => {
      this.#relay(request, response).catch(() => response.destroy());
    });
    await new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${this.#server.address().port}`;
  }

  async #relay(request, response) {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    let body = Buffer.concat(chunks).toString('utf8');
    if (request.url.endsWith('/outbox/complete')) {
      const parsed = JSON.parse(body);
      parsed.claimToken = this.#tokens.get(parsed.dispatchKey) ?? parsed.claimToken;
      body = JSON.stringify(parsed);
    }
    const headers = { ...request.headers, 'content-length': String(Buffer.byteLength(body)) };
    const answer = await fetch(`${this.target}${request.url}`, { method: request.method, headers, body: request.method === 'GET' ? undefined : body });
    const text = await answer.text();
    if (request.url.endsWith('/outbox/claim') && answer.ok) {
      for (const row of JSON.parse(text).rows ?? []) this.#tokens.set(row.dispatchKey, row.claimToken);
    }
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    response.end(text);
  }

  async close() {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => (this.#server ? this.#server.close(resolve) : resolve()));
  }
}
