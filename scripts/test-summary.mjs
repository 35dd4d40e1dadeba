// The last line of a CI run: "Tests: N passed, M failed", the totals of every runner, read from their reports.
// Plain JavaScript on purpose: it must run even when the TypeScript build is what failed.
//
//   node scripts/test-summary.mjs <report-dir> [<step>=<exit code> ...]
//
// Reports: jest's --json outputs (jest.json, and jest-<name>.json from runs with another jest config such as
// jest-real-model.json) and schemathesis' JUnit files (schemathesis-*.xml). A step that
// exited non-zero without any failed test in the reports (a lint error, a runner that crashed before writing
// its report) counts as one failed test, so a broken run never reads as green. Exits 1 when anything failed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [dir, ...steps] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: node scripts/test-summary.mjs <report-dir> [<step>=<exit code> ...]\n');
  process.exit(2);
}

const lines = [];
let passed = 0;
let failed = 0;

const jestFiles = existsSync(dir) ? readdirSync(dir).filter((f) => /^jest(-[\w-]+)?\.json$/.test(f)) : [];
for (const f of jestFiles.sort()) {
  const r = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
  // A suite that could not run (a syntax error, a failing beforeAll) has no failed test of its own: count it.
  const brokenSuites = r.numRuntimeErrorTestSuites ?? 0;
  passed += r.numPassedTests;
  failed += r.numFailedTests + brokenSuites;
  lines.push(
    `${path.basename(f, '.json')}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${brokenSuites} suites could not run`
  );
}

const junit = existsSync(dir) ? readdirSync(dir).filter((f) => /^schemathesis-.*\.xml$/.test(f)) : [];
for (const f of junit.sort()) {
  const xml = readFileSync(path.join(dir, f), 'utf8');
  const cases = xml.match(/<testcase\b[\s\S]*?(?:\/>|<\/testcase>)/g) ?? [];
  const bad = cases.filter((c) => /<(failure|error)\b/.test(c)).length;
  passed += cases.length - bad;
  failed += bad;
  lines.push(`${path.basename(f, '.xml')}: ${cases.length - bad} passed, ${bad} failed`);
}

for (const s of steps) {
  const i = s.lastIndexOf('=');
  const [name, code] = [s.slice(0, i), Number(s.slice(i + 1))];
  if (code !== 0) lines.push(`${name}: exited with ${code}`);
}
// Security of the verdict: a failed step must show as a failure even when no report recorded one.
if (failed === 0 && steps.some((s) => !s.endsWith('=0'))) failed = 1;

for (const l of lines) process.stdout.write(`  ${l}\n`);
process.stdout.write(`Tests: ${passed} passed, ${failed} failed\n`);
process.exit(failed > 0 ? 1 : 0);
