/**
 * The one address a sandboxed agent can reach: its own loopback port, forwarded to a UNIX socket that
 * the harness listens on outside (the key proxy, src/agent/key-proxy.ts). The sandbox has a network
 * namespace of its own, so nothing of the machine's network is there — no host loopback services, no
 * abstract UNIX sockets (they belong to a network namespace), no route out. Only the socket file, bound
 * into the sandbox, leads out, and what is behind it decides what passes.
 *
 * The forwarder runs inside the sandbox as the command's parent: it listens on 127.0.0.1:<port> first,
 * then starts the command with the same standard streams, passes signals on, and exits as the command
 * did. It is plain Node.js (the harness's own binary), so it needs nothing the machine may lack.
 */

/** Exit code when the forwarder cannot listen: the sandbox was not built as asked (the command never ran). */
export const FORWARD_SETUP_FAILED = 125;

/**
 * `node -e LOOPBACK_FORWARDER -- <port> <socket> <command> [args…]`. Connections are piped both ways,
 * and either side closing closes the other.
 */
export const LOOPBACK_FORWARDER = String.raw`'use strict';
const net = require('node:net');
const { spawn } = require('node:child_process');
const [port, socketPath, command, ...args] = process.argv.slice(1);
const server = net.createServer((client) => {
  const inner = net.connect(socketPath);
  client.pipe(inner);
  inner.pipe(client);
  const close = () => { client.destroy(); inner.destroy(); };
  client.on('error', close);
  inner.on('error', close);
  client.on('close', close);
  inner.on('close', close);
});
server.on('error', (e) => {
  process.stderr.write('hillclimb sandbox: cannot listen on 127.0.0.1:' + port + ': ' + e.message + '\n');
  process.exit(${FORWARD_SETUP_FAILED});
});
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(command, args, { stdio: 'inherit' });
  const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  for (const s of signals) process.on(s, () => child.kill(s));
  child.on('error', (e) => {
    process.stderr.write('hillclimb sandbox: cannot start ' + command + ': ' + e.message + '\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const s of signals) process.removeAllListeners(s);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
});
`;
