/**
 * A token for an https remote reaches git as an HTTP header through GIT_CONFIG_* environment
 * variables: never on the command line (argv is visible to every process on the machine) and never in
 * a config file. Callers pass `secrets` to runGit's `redact`, so no message or log shows them.
 */

/** The Basic credential GitHub accepts for a token over git's smart HTTP. */
export function basicAuth(token: string): string {
  return Buffer.from(`x-access-token:${token}`).toString('base64');
}

/**
 * Environment that makes git send `token` to `url`'s origin, and the strings to redact. For a
 * non-http remote (a path, ssh) nothing is added. The empty value first clears an extraheader that
 * actions/checkout may have persisted for the host (two
 * Authorization headers are refused); indexes continue after any GIT_CONFIG_COUNT the
 * process already has.
 */
export function httpAuthEnv(
  url: string,
  token: string,
  env: NodeJS.ProcessEnv = process.env,
): { env: Record<string, string>; secrets: string[] } {
  if (!/^https?:\/\//i.test(url)) return { env: {}, secrets: [token] };
  const basic = basicAuth(token);
  const header = `AUTHORIZATION: basic ${basic}`;
  const key = `http.${new URL(url).origin}/.extraheader`;
  const start = Number.parseInt(env.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  return {
    env: {
      GIT_CONFIG_COUNT: String(start + 2),
      [`GIT_CONFIG_KEY_${start}`]: key,
      [`GIT_CONFIG_VALUE_${start}`]: '',
      [`GIT_CONFIG_KEY_${start + 1}`]: key,
      [`GIT_CONFIG_VALUE_${start + 1}`]: header,
    },
    secrets: [token, basic, header],
  };
}

/** A URL for messages: any `user:password@` part dropped. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//');
}
