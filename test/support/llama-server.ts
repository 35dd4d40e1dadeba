/**
 * llama.cpp's OpenAI-compatible server (xllamacpp, run by scripts/llama-server.py) on a free loopback port: with
 * the small GGUF model that scripts/install-llama.sh puts in .tools/llama/ (the real-model test), or another
 * (`make eval`'s).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../../runtime/temporal';

export const LLAMA_DIR = path.join(REPO_ROOT, '.tools', 'llama');
export const LLAMA_MODEL = path.join(LLAMA_DIR, 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');

export interface LlamaServer {
  /** The OpenAI-compatible base URL (`…/v1`). */
  baseUrl: string;
  threads: number;
  /** The server's own log (stderr), last lines first to go. */
  logTail(): string;
  stop(): Promise<void>;
}

export interface LlamaOptions {
  /** The GGUF file (default: SmolLM2-135M). */
  model?: string;
  nPredict?: number;
  ctx?: number;
  /** CPU threads (default: KLEA_LLAMA_THREADS, else the server's own choice). */
  threads?: number;
  timeoutMs?: number;
  /** Where the server's whole log goes, beside the tail kept in memory. */
  logFile?: string;
  /** What to run when the server or the model is missing. */
  installer?: string;
}

export async function startLlamaServer(opts: LlamaOptions = {}) {
  const model = opts.model ?? LLAMA_MODEL;
  const installer = opts.installer ?? 'scripts/install-llama.sh';
  if (!existsSync(path.join(LLAMA_DIR, 'python', 'xllamacpp')) || !existsSync(model))
    throw new Error(`llama.cpp's server or its model is missing under ${LLAMA_DIR}: run ${installer}`);
  const args = [path.join(REPO_ROOT, 'scripts', 'llama-server.py'), '--model', model];
  if (opts.nPredict) args.push('--n-predict', String(opts.nPredict));
  if (opts.ctx) args.push('--ctx', String(opts.ctx));
  const threads = opts.threads ?? (Number(process.env.KLEA_LLAMA_THREADS) || undefined);
  if (threads) args.push('--threads', String(threads));
  const child: ChildProcess = spawn(process.env.KLEA_PYTHON ?? 'python3', args, {
    env: { ...process.env, PYTHONPATH: path.join(LLAMA_DIR, 'python'), PYTHONUNBUFFERED: '1' },
    // stdin stays open as a lifeline: the server exits when this process goes away.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  const logFile = opts.logFile ? createWriteStream(opts.logFile) : null;
  if (logFile) child.stderr!.pipe(logFile);
  child.stderr!.on('data', (chunk: Buffer) => {
    log.push(chunk.toString('utf8'));
    if (log.length > 400) log.splice(0, log.length - 400);
  });
  const logTail = () => log.join('').split('\n').slice(-40).join('\n');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const ready = await new Promise<{ url: string; threads: number }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`llama.cpp's server did not start within ${opts.timeoutMs ?? 120_000} ms:\n${logTail()}`)),
      opts.timeoutMs ?? 120_000
    );
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line) as { url: string; threads: number });
      } catch {
        reject(new Error(`llama.cpp's server said ${JSON.stringify(line)} instead of its address`));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`llama.cpp's server exited (${code}) before listening:\n${logTail()}`));
    });
  });

  const server: LlamaServer = {
    baseUrl: `${ready.url}/v1`,
    threads: ready.threads,
    logTail,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end();
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
      logFile?.end();
    },
  };
  return server;
}
