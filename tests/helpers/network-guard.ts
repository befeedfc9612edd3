/** Tests run with the network off: while a contract server runs, `fetch` reaches loopback only. */

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Make `fetch` refuse anything but loopback, reporting each stray URL; returns the undo. */
export function guardNetwork(onStray: (url: string) => void): () => void {
  const original = globalThis.fetch;
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!LOOPBACK.has(new URL(href).hostname)) {
      onStray(href);
      throw new TypeError(`network access is disabled in tests: ${href}`);
    }
    return original(input, init);
  }) as typeof fetch;
  return () => {
    globalThis.fetch = original;
  };
}
