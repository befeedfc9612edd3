/** Secret redaction shared by exec, logs and reports. */

/** Shorter values are not redacted: masking "1" or "ab" everywhere would garble output and hide nothing. */
const MIN_SECRET_LENGTH = 4;

export const REDACTED = '***';

/** Replace every occurrence of each secret in `text` with `***`. Longest secrets first. */
export function redact(text: string, secrets: readonly string[]): string {
  if (secrets.length === 0 || text === '') return text;
  let out = text;
  const ordered = [...new Set(secrets)]
    .filter((s) => s.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.length - a.length);
  for (const s of ordered) out = out.split(s).join(REDACTED);
  return out;
}

/** Environment variable names whose values are treated as secrets. */
export function isSecretName(name: string): boolean {
  return /(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|PRIVATE_KEY|CREDENTIAL)/i.test(name);
}

/** The values of secret-looking variables in an environment, for passing to `redact`. */
export function secretsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([k, v]) => isSecretName(k) && typeof v === 'string' && v.length >= MIN_SECRET_LENGTH)
    .map(([, v]) => v as string);
}
