/** The `klea` command line's usage: printed with what was wrong, and the process exits 2. */
export function usage(message?: string): never {
  if (message) process.stderr.write(`klea: ${message}\n`);
  process.stderr.write(
    'usage: klea ask "<request>" [--review always] [--read-only] [--project DIR] [--diff] [--api URL] [--token TOKEN]\n' +
      '       klea rewind <task> --to STEP [--rerun] [--force] [--dry-run] [--api URL] [--token TOKEN]\n' +
      '       klea mcp list | approve <server> [--yes] | revoke <server>\n'
  );
  process.exit(2);
}
