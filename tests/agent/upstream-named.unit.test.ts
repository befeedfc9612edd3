// withUpstreamNamed (src/agent/key-proxy.ts): a CLI's error line names the endpoint the user configured,
// never the key proxy's one-run port and token.
import { describe, expect, it } from 'vitest';
import { withUpstreamNamed } from '../../src/agent/key-proxy.js';

const TOKEN = '0123456789abcdef0123456789abcdef';
const proxy = { port: 41234, upstream: 'https://api.example.com/openai/v1' };

describe('withUpstreamNamed', () => {
  it('puts the upstream back in http and ws URLs, and for a bare address', () => {
    expect(
      withUpstreamNamed(
        `unexpected status 404 Not Found, url: ws://127.0.0.1:41234/${TOKEN}/openai/v1/responses); ` +
          `POST http://127.0.0.1:41234/${TOKEN}/openai/v1/responses; connect 127.0.0.1:41234 refused`,
        proxy,
      ),
    ).toBe(
      'unexpected status 404 Not Found, url: wss://api.example.com/openai/v1/responses); ' +
        'POST https://api.example.com/openai/v1/responses; connect api.example.com refused',
    );
  });

  it('a token cut short by a capped line is not left behind', () => {
    expect(withUpstreamNamed(`url: ws://127.0.0.1:41234/${TOKEN.slice(0, 9)}…`, proxy)).toBe(
      'url: wss://api.example.com…',
    );
  });

  it('leaves other addresses alone', () => {
    const text = `url: http://127.0.0.1:8080/${TOKEN}/v1 and 127.0.0.1:412345`;
    expect(withUpstreamNamed(text, proxy)).toBe(text);
  });
});
