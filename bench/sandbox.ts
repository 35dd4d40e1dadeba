/**
 * What the command sandbox costs: a trivial command (`true`) through the workspace server's run_command, inside
 * bubblewrap (built when the command starts, as every command's is) and without it, alternating call by call so
 * both see the same machine; and a batch of 8 started together, as a task's batch starts them, the same way.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createWorkspaceServer } from '../tools/workspace/create-server';
import type { BenchResult } from './history';

const CALLS = 30;
const BATCH = 8;
const BATCHES = 10;

async function connect(root: string, mode: 'bwrap' | 'none'): Promise<Client> {
  const server = createWorkspaceServer({ root, sandbox: { mode } });
  const client = new Client({ name: 'bench', version: '1' });
  const [c, s] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(s), client.connect(c)]);
  return client;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs `n` trivial commands at once; resolves with the time until the last is done, in ms. */
async function timed(client: Client, n: number, mode: string): Promise<number> {
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await client.callTool({ name: 'run_command', arguments: { command: 'true' } });
      if (res.isError) throw new Error(`run_command failed (${mode}): ${JSON.stringify(res.content)}`);
    })
  );
  return Number(process.hrtime.bigint() - started) / 1e6;
}

export async function benchSandbox(): Promise<BenchResult> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-sandbox-')));
  const clients = { bwrap: await connect(root, 'bwrap'), none: await connect(root, 'none') };
  const one: Record<keyof typeof clients, number[]> = { bwrap: [], none: [] };
  const batch: Record<keyof typeof clients, number[]> = { bwrap: [], none: [] };
  try {
    for (let i = 0; i < CALLS + 3; i++) {
      for (const mode of ['bwrap', 'none'] as const) {
        const ms = await timed(clients[mode], 1, mode);
        // The first calls warm up both paths (the sandbox probe runs once per server).
        if (i >= 3) one[mode].push(ms);
      }
    }
    for (let i = 0; i < BATCHES; i++)
      for (const mode of ['bwrap', 'none'] as const) batch[mode].push(await timed(clients[mode], BATCH, mode));
  } finally {
    await Promise.all(Object.values(clients).map((c) => c.close()));
  }
  const sandboxed = median(one.bwrap);
  const plain = median(one.none);
  const added = sandboxed - plain;
  const batchAdded = median(batch.bwrap) - median(batch.none);
  return {
    name: 'a trivial command (`true`): in a sandbox built when it starts ÷ without it',
    figures: [
      ['in the sandbox (median)', `${sandboxed.toFixed(1)} ms`],
      ['without it (median)', `${plain.toFixed(1)} ms`],
      ['added by the sandbox', `${added.toFixed(1)} ms`],
      [`${BATCH} started together, the last done: in the sandbox (median)`, `${median(batch.bwrap).toFixed(1)} ms`],
      [`${BATCH} started together, the last done: without it (median)`, `${median(batch.none).toFixed(1)} ms`],
      [`added by the sandbox to the last of ${BATCH} started together`, `${batchAdded.toFixed(1)} ms`],
      [`added by the sandbox per command of ${BATCH} started together`, `${(batchAdded / BATCH).toFixed(1)} ms`],
    ],
    ratio: sandboxed / plain,
    goal: '≤ 100 ms added per command',
    ok: added <= 100,
  };
}
