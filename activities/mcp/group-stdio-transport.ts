/**
 * An MCP stdio client transport whose server runs in its own process group, so closing it ends the server and
 * everything the server started (wrappers like `npx` leave grandchildren behind otherwise).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface GroupStdioParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Written to the child's fd 3, then the pipe is closed (for secrets kept out of its environment). */
  secretFd3?: string;
}

const STDERR_TAIL = 8 * 1024;

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private proc?: ChildProcessWithoutNullStreams;
  private readonly buffer = new ReadBuffer();
  private stderr = '';
  private closed = false;
  private groupPid?: number;

  constructor(private readonly params: GroupStdioParams) {}

  get pid(): number | undefined {
    return this.groupPid;
  }

  /** The end of what the server wrote to stderr: the useful part of a start-up failure. */
  get stderrTail(): string {
    return this.stderr.trim();
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      let proc: ChildProcessWithoutNullStreams;
      try {
        proc = spawn(this.params.command, this.params.args, {
          env: this.params.env,
          cwd: this.params.cwd,
          stdio: this.params.secretFd3 === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', 'pipe'],
          detached: true,
          windowsHide: true,
        }) as ChildProcessWithoutNullStreams;
        const secret = proc.stdio[3] as NodeJS.WritableStream | null | undefined;
        if (secret && this.params.secretFd3 !== undefined) {
          (secret as NodeJS.WritableStream & { on(e: 'error', f: () => void): void }).on('error', () => undefined);
          secret.end(this.params.secretFd3);
        }
      } catch (err) {
        reject(err as Error);
        return;
      }
      this.proc = proc;
      this.groupPid = proc.pid;
      proc.once('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      proc.once('spawn', () => resolve());
      proc.once('close', () => {
        this.proc = undefined;
        if (!this.closed) {
          this.closed = true;
          this.onclose?.();
        }
      });
      proc.stdout.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let msg: JSONRPCMessage | null;
          try {
            msg = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error);
            continue;
          }
          if (!msg) break;
          this.onmessage?.(msg);
        }
      });
      proc.stderr.on('data', (chunk: Buffer) => {
        this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      proc.stdin.on('error', (err) => this.onerror?.(err));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.proc?.stdin;
      if (!stdin || stdin.destroyed) {
        reject(new Error('the MCP server process is not running'));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  async close(): Promise<void> {
    const proc = this.proc;
    const wasClosed = this.closed;
    this.closed = true;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
      // The server is gone, but what it started may not be.
      this.killGroup('SIGKILL');
      if (!wasClosed) this.onclose?.();
      return;
    }
    const exited = new Promise<void>((r) => proc.once('close', () => r()));
    const wait = (ms: number) =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    proc.stdin.end();
    this.killGroup('SIGTERM');
    if (!(await wait(2000))) {
      this.killGroup('SIGKILL');
      await wait(2000);
    }
    // Anything the server left in its group (grandchildren) goes too.
    this.killGroup('SIGKILL');
    this.buffer.clear();
    if (!wasClosed) this.onclose?.();
  }

  private killGroup(signal: NodeJS.Signals) {
    if (!this.groupPid) return;
    try {
      process.kill(-this.groupPid, signal);
    } catch {
      /* the group is gone */
    }
  }
}
