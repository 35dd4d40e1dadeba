/** The environment commands run with: the server's own, minus anything that looks like a secret. */
const SECRET_NAME =
  /(_KEY|_KEYS|_TOKEN|_TOKENS|_SECRET|_SECRETS|_PASSWORD|_PASSWD|_PASS|_PWD|_CREDENTIALS?|_PAT|_AUTH|_COOKIE|_SESSION)$/i;
const SECRET_PREFIX = /^(AWS_|AZURE_|GOOGLE_APPLICATION_CREDENTIALS|GCLOUD_|KLEA_API_|NPM_CONFIG__AUTH|NODE_AUTH)/i;
const CREDENTIAL_URL = /:\/\/[^/\s:@]+:[^@\s]+@/;

export function scrubEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    // Security: secrets never reach a command the model asked for.
    if (SECRET_NAME.test(k) || SECRET_PREFIX.test(k) || CREDENTIAL_URL.test(v)) continue;
    out[k] = v;
  }
  return out;
}
