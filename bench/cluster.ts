/**
 * Klea on a real Temporal cluster (runtime/cluster.ts: PostgreSQL and the server's four services, as `make cluster`
 * runs them) against the hand-written Temporal agent on the same cluster, measured side by side in one run:
 * - P1 on the cluster: a chained tool step in Klea ÷ in the hand-written agent;
 * - P3 on the cluster: 1-step tasks completed per second, Klea ÷ the hand-written agent;
 * - what the cluster costs Klea per chained step over the dev server (measured in the same rounds).
 * Both work as a deployed cluster has it: Klea's worker is a cluster host (`worker.host_id`) and its tasks have that
 * host as their home, so a task's project activities go through the host's own queue; the hand-written agent sends
 * its activities that use the project's MCP server (pick and tool calls) to a host queue of its own. The server build comes from
 * scripts/install-temporal-server.sh (cached once per machine; KLEA_TEMPORAL_SERVER_DIR names another).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_HOST_WAIT_MS, type Home } from '../common/home';
import { startScratchCluster } from '../runtime/cluster';
import { REPO_ROOT } from '../runtime/temporal';
import { startStack } from '../test/support/stack';
import { startHandAgent } from './hand-agent';
import type { BenchResult } from './history';
import { handTask, kleaTask, median, project, READ, tasksPerSecond } from './steps';
import { runAlone, type BenchEnv } from './support';

const HOST = 'bench';

/** The cached Temporal server build (built once per machine when it is not there yet). */
function temporalServerDir(): string {
  if (process.env.KLEA_TEMPORAL_SERVER_DIR) return process.env.KLEA_TEMPORAL_SERVER_DIR;
  const res = spawnSync(path.join(REPO_ROOT, 'scripts', 'install-temporal-server.sh'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (res.status !== 0) throw new Error('the Temporal server is not built (scripts/install-temporal-server.sh failed)');
  return res.stdout.trim().split('\n').pop()!;
}

async function startClusterEnv(): Promise<BenchEnv> {
  const dataDir = path.join(REPO_ROOT, '.klea', 'bench-cluster');
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const { cluster } = await startScratchCluster(temporalServerDir(), dataDir);
  try {
    return await startStack({
      taskQueue: 'bench-cluster',
      projectDir: realpathSync(os.tmpdir()),
      server: {
        address: cluster.address,
        stop: async () => {
          await cluster.stop();
          rmSync(dataDir, { recursive: true, force: true });
        },
      },
      hostId: HOST,
    });
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** `dev` is the dev server's stack, where Klea's per-step figure is measured in the same rounds as the cluster's. */
export async function benchCluster(dev: BenchEnv): Promise<BenchResult[]> {
  const env = await startClusterEnv();
  const home: Home = { hostId: HOST, waitMs: DEFAULT_HOST_WAIT_MS };
  try {
    const agent = await startHandAgent(env, { hostQueue: 'bench-hand-agent-host' });
    const kleaDir = project();
    const handDir = project();
    const devDir = project();
    const klea = (n: number) => kleaTask(env, kleaDir, n, { chain: true, call: READ, home });
    const hand = (n: number) => handTask(env, agent, handDir, n, { chain: true, call: READ });
    const onDev = (n: number) => kleaTask(dev, devDir, n, { chain: true, call: READ });
    try {
      for (let i = 0; i < 2; i++) {
        await klea(2);
        await hand(2);
        await onDev(2);
      }
      env.fake.reset();
      dev.fake.reset();

      const N = 20;
      // Five rounds, not three as on the dev server: a cluster of five processes on the same cores moves one round's
      // figure by a fifth either way.
      const ROUNDS = 5;
      const kleaStep: number[] = [];
      const handStep: number[] = [];
      const devStep: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        kleaStep.push((await klea(N)) / N);
        env.fake.reset();
        handStep.push((await hand(N)) / N);
        env.fake.reset();
        devStep.push((await onDev(N)) / N);
        dev.fake.reset();
      }

      const M = 20;
      const PER_ROUND = 100;
      const kleaTps: number[] = [];
      const handTps: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        kleaTps.push(await tasksPerSecond(() => klea(1), M, PER_ROUND));
        env.fake.reset();
        handTps.push(await tasksPerSecond(() => hand(1), M, PER_ROUND));
        env.fake.reset();
      }

      const p1 = median(kleaStep) / median(handStep);
      const p3 = median(kleaTps) / median(handTps);
      const cost = median(kleaStep) / median(devStep);
      return [
        {
          name: `P1 on the cluster (PostgreSQL, the server's four services): per chained tool step (${N}-step task ÷ ${N}), Klea ÷ hand-written agent`,
          figures: [
            [`Klea, per step (median of ${ROUNDS})`, `${median(kleaStep).toFixed(1)} ms`],
            [`hand-written agent, per step (median of ${ROUNDS})`, `${median(handStep).toFixed(1)} ms`],
          ],
          ratio: p1,
          goal: '≤ 1.2',
          ok: p1 <= 1.2,
        },
        {
          name: `P3 on the cluster: 1-step tasks completed per second (${M} in flight, ${PER_ROUND} per round), Klea ÷ hand-written agent`,
          figures: [
            [`Klea (median of ${ROUNDS})`, `${median(kleaTps).toFixed(1)} tasks/s`],
            [`hand-written agent (median of ${ROUNDS})`, `${median(handTps).toFixed(1)} tasks/s`],
          ],
          ratio: p3,
          goal: '≥ 0.8',
          ok: p3 >= 0.8,
        },
        {
          name: "the cluster's cost per chained tool step: Klea on the cluster ÷ Klea on the dev server (same rounds)",
          figures: [
            [`on the cluster (median of ${ROUNDS})`, `${median(kleaStep).toFixed(1)} ms`],
            [`on the dev server (median of ${ROUNDS})`, `${median(devStep).toFixed(1)} ms`],
            ['added by the cluster per step', `${(median(kleaStep) - median(devStep)).toFixed(1)} ms`],
          ],
          ratio: cost,
          goal: 'report: no target is named for it (the cluster targets are P1 ≤ 1.2 and P3 ≥ 0.8 above)',
          ok: true,
        },
      ];
    } finally {
      await agent.stop();
    }
  } finally {
    await env.close();
  }
}

if (require.main === module) runAlone(benchCluster);
