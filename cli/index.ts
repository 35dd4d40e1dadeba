#!/usr/bin/env node
/**
 * `klea`: a thin command-line client over the REST API (and, for `mcp`, the worker's approvals file). This entry
 * reads the command and hands it to its module: ask.ts, rewind.ts, mcp.ts.
 *
 *   klea ask "List the TODOs in src/" [--review always] [--read-only] [--project DIR] [--diff]
 *            [--api http://127.0.0.1:8080] [--token T]     (KLEA_API_URL, KLEA_API_TOKEN)
 *   klea rewind <task> --to s3 [--rerun] [--force] [--dry-run] [--api URL] [--token T]
 *   klea mcp list | approve <server> [--yes] | revoke <server>      (on the worker's machine: KLEA_DATA_DIR)
 */
import { ask, parseArgs } from './ask';
import { mcp } from './mcp';
import { parseRewindArgs, rewind } from './rewind';

if (require.main === module) {
  const argv = process.argv.slice(2);
  const io = { input: process.stdin, output: process.stdout };
  (argv[0] === 'rewind'
    ? rewind(parseRewindArgs(argv.slice(1)), io)
    : argv[0] === 'mcp'
      ? mcp(argv.slice(1), io)
      : ask(parseArgs(argv), io)
  ).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`klea: ${(err as Error).message}\n`);
      process.exit(1);
    }
  );
}
