/**
 * A test's own HTTP server on a free loopback port, closed (its open connections too) by the closer it
 * registers: for upstreams a proxy under test forwards to.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** `server` listening on 127.0.0.1; `closers` gets what closes it. Its URL, `http://127.0.0.1:<port>`. */
export async function listenOnLoopback(server: Server, closers: Array<() => Promise<void>>): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
