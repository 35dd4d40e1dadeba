/**
 * What a checkpoint costs a step, on a project of 10,000 files, when the step changes one file: an edit_file and a
 * run_command, each through the workspace server with `klea/checkpoint` and without it, alternating call by call so
 * both see the same machine (the cost added is the median of the differences between neighbours), after a first
 * checkpoint has warmed the store up (the first one hashes and keeps the whole project).
 *
 * Commands run in bubblewrap, as every command does; but the sandbox's own cost (it looks through the whole project
 * for the files to hide, and watches it while the command runs) varies by tens of milliseconds on a loaded machine,
 * more than a checkpoint costs, so the difference it leaves is noise. The goal is judged on the two figures that
 * noise does not blur, the larger of them: the time added through the server (for a command, with commands run
 * without the sandbox: everything the checkpoint does, its file events included), and the checkpoint's own time
 * measured inside the server (commands in the sandbox).
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CHECKPOINT_META_KEY, IDEMPOTENCY_META_KEY } from '../common/workspace-protocol';
import { createCheckpointRecorder } from '../tools/checkpoints';
import { createWorkspaceServer } from '../tools/workspace/create-server';
import type { BenchResult } from './history';

const FILES = 10_000;
const CALLS = 40;
const GOAL_MS = 50;

/** 20 packages × 25 modules × 20 files of about 1 KB. */
function makeProject(root: string): string[] {
  const files: string[] = [];
  for (let a = 0; a < 20; a++)
    for (let b = 0; b < 25; b++) {
      const dir = path.join(root, `pkg${a}`, `mod${b}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < FILES / 500; f++) {
        const rel = `pkg${a}/mod${b}/f${f}.ts`;
        writeFileSync(
          path.join(root, rel),
          `// ${rel}\nexport const value = 0;\n${'export const x = 1;\n'.repeat(50)}`
        );
        files.push(rel);
      }
    }
  return files;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number) => `${x.toFixed(1)} ms`;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/**
 * Through the workspace server: each call's time with and without the checkpoint, alternating, and the time each
 * checkpoint took inside the server.
 */
async function throughServer(root: string, files: string[], storeDir: string, mode: 'bwrap' | 'none', calls: number) {
  const own = { edit: [] as number[], command: [] as number[] };
  let measuring = false;
  const server = createWorkspaceServer({
    root,
    sandbox: { mode },
    checkpoints: {
      dir: storeDir,
      maxBytes: 1024 * 1024 * 1024,
      onCost: (tool, took) => {
        if (measuring) own[tool === 'run_command' ? 'command' : 'edit'].push(took);
      },
    },
  });
  const client = new Client({ name: 'bench', version: '1' });
  const [c, s] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(s), client.connect(c)]);
  let n = 0;
  const call = async (name: string, args: Record<string, unknown>, checkpointed: boolean) => {
    const meta = checkpointed
      ? { [CHECKPOINT_META_KEY]: { task: 'bench-task', step: `s${++n}` }, [IDEMPOTENCY_META_KEY]: `k${n}` }
      : { [IDEMPOTENCY_META_KEY]: `k${++n}` };
    const res = await client.callTool({ name, arguments: args, _meta: meta });
    if (res.isError) throw new Error(`${name} failed: ${JSON.stringify(res.content)}`);
  };
  let next = 0;
  const edit = (checkpointed: boolean) => {
    const file = files[next++ % files.length];
    // A line added under the file's first one: the edit applies however often the file was changed before.
    return call(
      'edit_file',
      { path: file, old_string: `// ${file}\n`, new_string: `// ${file}\n// edit ${next}\n` },
      checkpointed
    );
  };
  const command = (checkpointed: boolean) => {
    const file = files[next++ % files.length];
    return call('run_command', { command: `echo changed >> ${file}` }, checkpointed);
  };
  const out = {
    edit: { on: [] as number[], off: [] as number[] },
    command: { on: [] as number[], off: [] as number[] },
  };
  let warmUp = 0;
  try {
    // The first checkpoint hashes and keeps the whole project: its own figure.
    warmUp = await timed(() => command(true));
    for (let i = 0; i < 3; i++) {
      await edit(true);
      await edit(false);
      await command(true);
      await command(false);
    }
    measuring = true;
    for (let i = 0; i < calls; i++) {
      // Which goes first alternates, so neither always follows the other.
      for (const on of i % 2 ? [true, false] : [false, true]) {
        out.edit[on ? 'on' : 'off'].push(await timed(() => edit(on)));
        out.command[on ? 'on' : 'off'].push(await timed(() => command(on)));
      }
    }
  } finally {
    await client.close();
  }
  return { warmUp, own, ...out };
}

/**
 * A command's checkpoint through the store API, the change made directly, where the project cannot be watched
 * (`watch: false`: the inotify limit): a walk before and after each command.
 */
async function walking(root: string, files: string[], storeDir: string, calls: number): Promise<number[]> {
  const took: number[] = [];
  const rec = createCheckpointRecorder({
    storeDir,
    root: async () => root,
    maxBytes: 1024 * 1024 * 1024,
    sensitive: () => false,
    ownState: () => false,
    watch: false,
    onCost: (tool, ms) => {
      if (tool === 'run_command') took.push(ms);
    },
  });
  let n = 0;
  const cp = () => rec.forCall('run_command', { [CHECKPOINT_META_KEY]: { task: 'bench-walk', step: `s${++n}` } })!;
  try {
    // The first builds the index; the rest are measured.
    await rec.command(cp(), async () => undefined);
    took.length = 0;
    for (let i = 0; i < calls; i++) {
      const file = path.join(root, files[(i * 7919) % files.length]);
      await rec.command(cp(), async () => writeFileSync(file, `// command ${i}\n`));
    }
  } finally {
    rec.close();
  }
  return took;
}

export async function benchCheckpoints(): Promise<BenchResult[]> {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-ckpt-')));
  try {
    const root = path.join(dir, 'project');
    const files = makeProject(root);
    const server = await throughServer(root, files, path.join(dir, 'checkpoints'), 'bwrap', CALLS);
    const plain = await throughServer(root, files, path.join(dir, 'checkpoints-plain'), 'none', CALLS);
    const walk = await walking(root, files, path.join(dir, 'checkpoints-walk'), 5);
    // Each call with the checkpoint against the one without it made next to it: a change of load in between
    // moves both.
    const paired = (r: typeof server, what: 'edit' | 'command') =>
      median(r[what].on.map((on, i) => on - r[what].off[i]));
    const row = (what: 'edit' | 'command', label: string): BenchResult => {
      // An edit has no sandbox to blur it; a command's difference is taken where commands run without it.
      const judged = Math.max(paired(what === 'edit' ? server : plain, what), median(server.own[what]));
      const figures: Array<[string, string]> = [
        ['with the checkpoint (median)', ms(median(server[what].on))],
        ['without it (median)', ms(median(server[what].off))],
        ['added by the checkpoint (median of the differences, call by call)', ms(paired(server, what))],
        ['added, commands run without the sandbox', ms(paired(plain, what))],
        ["the checkpoint's own time inside the server (median)", ms(median(server.own[what]))],
      ];
      if (what === 'command')
        figures.push(
          ['first checkpoint (hashes and keeps the project)', ms(server.warmUp)],
          ["the checkpoint's own time where the project cannot be watched (a walk each time)", ms(median(walk))]
        );
      else figures.splice(3, 1);
      return {
        name: `checkpoint cost per step, ${FILES} files, the step's ${label} changes one file`,
        figures,
        ratio: judged / GOAL_MS,
        goal: `≤ ${GOAL_MS} ms added per step`,
        ok: judged <= GOAL_MS,
      };
    };
    return [row('edit', 'edit_file'), row('command', 'run_command')];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `node --expose-gc dist/bench/checkpoints.js`: this benchmark alone, its rows printed as `npm run bench` prints them. */
if (require.main === module) {
  benchCheckpoints().then(
    (rows) => {
      for (const r of rows) {
        const figures = r.figures.map(([k, v]) => `${k} ${v}`).join(', ');
        console.log(`${r.ok ? 'yes' : 'no '}  ${r.name}: ${figures} → ${r.ratio.toFixed(2)} (goal ${r.goal})`);
        console.log(
          `| ${r.name} | ${r.figures.map(([k, v]) => `${k}: ${v}`).join('<br>')} | ${r.ratio.toFixed(2)} | ${r.goal} | ${r.ok ? 'yes' : 'no'} |`
        );
      }
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    }
  );
}
