/** llama.cpp's server (scripts/llama-server.py, xllamacpp) with the eval's model, on a free loopback port. */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../../runtime/temporal';

export const LLAMA_DIR = path.join(REPO_ROOT, '.tools', 'llama');

export interface LlamaServer {
  /** The OpenAI-compatible base URL (`…/v1`). */
  baseUrl: string;
  threads: number;
  stop(): Promise<void>;
}

export async function startLlamaServer(opts: {
  model: string;
  ctx: number;
  nPredict: number;
  threads?: number;
  logFile: string;
}): Promise<LlamaServer> {
  if (!existsSync(path.join(LLAMA_DIR, 'python', 'xllamacpp')) || !existsSync(opts.model))
    throw new Error(`llama.cpp's server or the model is missing under ${LLAMA_DIR}: run scripts/install-eval-model.sh`);
  const args = [path.join(REPO_ROOT, 'scripts', 'llama-server.py'), '--model', opts.model];
  args.push('--ctx', String(opts.ctx), '--n-predict', String(opts.nPredict));
  if (opts.threads) args.push('--threads', String(opts.threads));
  const child = spawn(process.env.KLEA_PYTHON ?? 'python3', args, {
    env: { ...process.env, PYTHONPATH: path.join(LLAMA_DIR, 'python'), PYTHONUNBUFFERED: '1' },
    // stdin stays open as a lifeline: the server exits when this process goes away.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const log = createWriteStream(opts.logFile);
  child.stderr.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = await new Promise<{ url: string; threads: number }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`llama.cpp's server did not start in 5 minutes (see ${opts.logFile})`)),
      300_000
    );
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line) as { url: string; threads: number });
      } catch {
        reject(new Error(`llama.cpp's server said ${JSON.stringify(line)} instead of its address`));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`llama.cpp's server exited (${code}) before listening (see ${opts.logFile})`));
    });
  });
  return {
    baseUrl: `${ready.url}/v1`,
    threads: ready.threads,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
      log.end();
    },
  };
}
