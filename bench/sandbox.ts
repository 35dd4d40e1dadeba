/**
 * What the command sandbox costs: a trivial command (`true`) through the workspace server's run_command, inside
 * bubblewrap (as configured by default, with sandboxes started ahead of their commands, and with each sandbox
 * started with its command) and without it, alternating call by call so all see the same machine.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createWorkspaceServer } from '../tools/workspace/create-server';
import type { BenchResult } from './history';

const CALLS = 30;

async function connect(root: string, mode: 'bwrap' | 'none', warm?: number): Promise<Client> {
  const server = createWorkspaceServer({ root, sandbox: { mode, ...(warm !== undefined ? { warm } : {}) } });
  const client = new Client({ name: 'bench', version: '1' });
  const [c, s] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(s), client.connect(c)]);
  return client;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchSandbox(): Promise<BenchResult> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-sandbox-')));
  const clients = {
    bwrap: await connect(root, 'bwrap'),
    cold: await connect(root, 'bwrap', 0),
    none: await connect(root, 'none'),
  };
  const times: Record<keyof typeof clients, number[]> = { bwrap: [], cold: [], none: [] };
  try {
    for (let i = 0; i < CALLS + 3; i++) {
      for (const mode of ['bwrap', 'cold', 'none'] as const) {
        const started = process.hrtime.bigint();
        const res = await clients[mode].callTool({ name: 'run_command', arguments: { command: 'true' } });
        if (res.isError) throw new Error(`run_command failed (${mode}): ${JSON.stringify(res.content)}`);
        // The first calls warm up both paths (the sandbox probe runs once per server).
        if (i >= 3) times[mode].push(Number(process.hrtime.bigint() - started) / 1e6);
      }
    }
  } finally {
    await Promise.all(Object.values(clients).map((c) => c.close()));
  }
  const sandboxed = median(times.bwrap);
  const plain = median(times.none);
  return {
    name: 'a trivial command (`true`): in the sandbox ÷ without it',
    figures: [
      ['in the sandbox (median)', `${sandboxed.toFixed(1)} ms`],
      ['in a sandbox started with the command (warm: 0; median)', `${median(times.cold).toFixed(1)} ms`],
      ['without it (median)', `${plain.toFixed(1)} ms`],
      ['added by the sandbox', `${(sandboxed - plain).toFixed(1)} ms`],
    ],
    ratio: sandboxed / plain,
    goal: '≤ 100 ms added per command',
    ok: sandboxed - plain <= 100,
  };
}
