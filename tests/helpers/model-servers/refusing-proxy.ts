/**
 * The network fence for a real CLI under test: an HTTP proxy that refuses everything and records what
 * was asked for. The CLI's environment points HTTP_PROXY / HTTPS_PROXY / ALL_PROXY here and lists only
 * loopback in NO_PROXY, so the model server on 127.0.0.1 is reached directly while any other host (an
 * update check, telemetry, the real model API) is refused at once — and shows up in `attempts`, where a
 * test can assert there were none. Both CLIs honour these variables (codex through reqwest, Claude Code
 * through its runtime's fetch).
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RefusingProxy {
  url: string;
  /** `host:port` of every CONNECT, or the absolute URL of every plain proxied request. */
  attempts: string[];
  /** The variables that send a process's traffic here. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startRefusingProxy(): Promise<RefusingProxy> {
  const attempts: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    attempts.push(req.url ?? '?');
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('no network in tests\n');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req, socket: Socket) => {
    attempts.push(req.url ?? '?');
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const noProxy = '127.0.0.1,localhost,::1';
  return {
    url,
    attempts,
    env: {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      ALL_PROXY: url,
      http_proxy: url,
      https_proxy: url,
      all_proxy: url,
      NO_PROXY: noProxy,
      no_proxy: noProxy,
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
