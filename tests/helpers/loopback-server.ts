/**
 * The shell every contract server shares: an HTTP server on a free loopback port with the network
 * guard on while it runs. A handler that throws answers 500 and is recorded as a violation, so a bug
 * in a contract server fails the test that met it instead of hanging the client.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardNetwork } from './network-guard.js';

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Stop listening and give `fetch` back its network. */
  close(): Promise<void>;
}

export async function serveOnLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  violations: string[],
): Promise<LoopbackServer> {
  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      violations.push(`server error: ${(e as Error).stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const restoreFetch = guardNetwork((url) => violations.push(`network access outside loopback: ${url}`));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      restoreFetch();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
