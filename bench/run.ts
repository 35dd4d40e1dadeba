/** `npm run bench`: runs every benchmark side by side in one run and writes bench/RESULTS.md. */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../runtime/temporal';
import { benchCheckpoints } from './checkpoints';
import { benchCluster } from './cluster';
import { benchEventStreams } from './event-streams';
import { benchHistory, type BenchResult } from './history';
import { benchLongTask } from './long-task';
import { benchMemory } from './memory';
import { benchSandbox } from './sandbox';
import { benchSessions } from './sessions';
import { benchSteps } from './steps';
import { met, rowLine, startBenchEnv } from './support';

async function main() {
  const env = await startBenchEnv();
  const results: BenchResult[] = [];
  try {
    for (const bench of [
      benchSteps,
      benchCluster,
      benchHistory,
      benchLongTask,
      benchMemory,
      benchSessions,
      benchSandbox,
      benchCheckpoints,
      benchEventStreams,
    ]) {
      // A benchmark that fails is listed as not measured, and the others still run.
      const out = await bench(env).catch((err: unknown): BenchResult => {
        console.error(err);
        const why = err instanceof Error ? err.message : String(err);
        return { name: bench.name, figures: [['not measured', why.split('\n')[0]]], ratio: NaN, goal: '-', ok: false };
      });
      for (const r of Array.isArray(out) ? out : [out]) {
        console.log(rowLine(r));
        results.push(r);
      }
    }
  } finally {
    await env.close();
  }
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()}`;
  const lines = [
    '# Benchmark results',
    '',
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine}, by \`npm run bench\`. Each ratio compares figures measured side by side in the same run.`,
    '',
    '| benchmark | figures | ratio | goal | met |',
    '| --- | --- | --- | --- | --- |',
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.figures.map(([k, v]) => `${k}: ${v}`).join('<br>')} | ${r.ratio.toFixed(2)} | ${r.goal} | ${met(r)} |`
    ),
    '',
  ];
  writeFileSync(path.join(REPO_ROOT, 'bench', 'RESULTS.md'), lines.join('\n'));
  console.log('wrote bench/RESULTS.md');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
