// Test support: a TCP proxy on loopback between sync clients and the runstore-sync processes,
// which spreads connections over the processes alive and, on demand, delays bytes, refuses
// connections, and cuts connections mid-request: before the request reaches a server, or once
// the server has answered (the answer is lost after the server applied the request).
import net from 'node:net';

export class FaultProxy {
  #server = null;
  #sockets = new Set();
  #next = 0;
  /** Where connections go: a function giving the ports of the servers alive. */
  #backends;
  /** The faults now (see `setFaults`). */
  faults = { refuse: false, cutRequest: 0, cutAnswer: 0, delayMs: 0 };
  /** What was done to connections, for the report. */
  counts = { connections: 0, refused: 0, cutRequests: 0, cutAnswers: 0 };

  constructor(backends) {
    this.#backends = backends;
  }

  /** Starts listening on 127.0.0.1; resolves to the port. */
  async listen() {
    this.#server = net.createServer((client) => this.#accept(client));
    await new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this.#server.address().port;
  }

  /**
   * `refuse`: close every new connection at once; `cutRequest`, `cutAnswer`: the chance that a
   * chunk of a request (before it is forwarded) or of an answer (once the server sent it) ends
   * the connection instead; `delayMs`: the most each chunk is held, in order.
   */
  setFaults(faults) {
    this.faults = { refuse: false, cutRequest: 0, cutAnswer: 0, delayMs: 0, ...faults };
  }

  /** Closes the connections open now (the ones a killed server held are closed already). */
  dropAll() {
    for (const socket of this.#sockets) socket.destroy();
  }

  async close() {
    this.dropAll();
    await new Promise((resolve) => this.#server?.close(resolve) ?? resolve());
  }

  #accept(client) {
    this.counts.connections += 1;
    const ports = this.#backends();
    if (this.faults.refuse || ports.length === 0) {
      this.counts.refused += 1;
      client.destroy();
      return;
    }
    const upstream = net.connect(ports[this.#next++ % ports.length], '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    this.#relay(client, upstream, 'cutRequest', 'cutRequests');
    this.#relay(upstream, client, 'cutAnswer', 'cutAnswers');
  }

  /** Forwards `from`'s bytes to `to`, in order, under the faults of the moment. */
  #relay(from, to, cut, counter) {
    let ready = 0;
    from.on('data', (chunk) => {
      if (Math.random() < this.faults[cut]) {
        this.counts[counter] += 1;
        from.destroy();
        to.destroy();
        return;
      }
      const delay = this.faults.delayMs > 0 ? Math.random() * this.faults.delayMs : 0;
      if (delay === 0 && ready <= Date.now()) {
        to.write(chunk);
        return;
      }
      ready = Math.max(ready, Date.now()) + delay;
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, ready - Date.now());
    });
  }
}
