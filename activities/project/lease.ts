/**
 * Leases on a group's projects (common/home.ts): the hosts of a group reach the same projects on a shared volume,
 * and one host at a time changes a project, the one that holds its lease. Its checkpoint store, stat index and
 * workspace state have one writer, and a command of one host never runs beside another host's.
 *
 * ```
 * <group_dir>/leases/<sha256(project)[:24]>/<epoch, 12 digits>.json   {hostId, epoch, projectDir, until, released?}
 * ```
 *
 * - The current lease is the file of the highest epoch. A host takes the project by creating the next epoch's file
 *   (a hard link of a file it wrote: it fails when another host made that epoch first), so two hosts never both
 *   take one; only the holder rewrites its own file.
 * - The holder renews its leases while it reaches Temporal (a host that is cut off gets no activity to run, and must
 *   let another host take its projects). A lease not renewed is free `leaseMs / 2` after its `until`; a holder whose
 *   lease ran out gives its projects up at `until` (stops its workspace servers, with their commands), before any
 *   other host may take them. That assumes the hosts' clocks agree within `leaseMs / 2`.
 * - A host that took a project from another host (or took it back) starts its workspace server for it afresh: the
 *   server reads the stat index and the store from the shared volume and walks the project before it trusts them.
 * - A host that stops gives its leases up (`released`), and another host takes them at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { Failure } from '../../common/failures';

const LeaseSchema = z.object({
  hostId: z.string(),
  epoch: z.number().int().positive(),
  projectDir: z.string(),
  until: z.number(),
  released: z.boolean().optional(),
});
export type Lease = z.infer<typeof LeaseSchema>;

const EPOCH_FILE = /^(\d{12})\.json$/;
/** Epoch files kept behind the current one (the rest are removed when a host takes the project). */
const KEPT_EPOCHS = 2;

export interface ProjectLeasesOptions {
  /** The group's directory on the shared volume (worker.group_dir). */
  groupDir: string;
  /** This host. */
  hostId: string;
  /** How long a lease lasts unless renewed (worker.group_lease_ms). */
  leaseMs: number;
  /** Whether this host reaches Temporal now (asked before each renewal). */
  connected(): Promise<boolean>;
  /** The project was lost (another host took it, or the lease ran out unrenewed): stop working on it here. */
  onLost(projectDir: string): Promise<void>;
  /** Told when this host takes a project (its servers for it must start afresh). */
  onTaken?(projectDir: string, from: Lease | null): Promise<void>;
  now?: () => number;
  warn?(message: string, fields?: Record<string, unknown>): void;
}

/** The failure a host that does not hold a group project's lease answers a changing activity with. */
export function heldElsewhere(lease: Lease): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `project ${lease.projectDir} is held by host ${lease.hostId} of its group (lease epoch ${lease.epoch})`,
    Failure.ProjectHeldElsewhere,
    { hostId: lease.hostId, epoch: lease.epoch }
  );
}

export class ProjectLeases {
  /** The projects this host holds: the epoch of its lease and when it runs out. */
  private readonly held = new Map<string, { epoch: number; until: number }>();
  /** One change of a project's lease at a time in this process. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: ProjectLeasesOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The directory of a project's lease files. */
  dirOf(projectDir: string): string {
    const key = createHash('sha256').update(projectDir).digest('hex').slice(0, 24);
    return path.join(this.opts.groupDir, 'leases', key);
  }

  /** The current lease of a project, or null (never taken). */
  async current(projectDir: string): Promise<Lease | null> {
    const dir = this.dirOf(projectDir);
    const epochs = await this.epochs(dir);
    for (const epoch of epochs.reverse()) {
      const lease = await readLease(path.join(dir, epochFile(epoch)));
      // A file half-written cannot be (each is renamed or linked into place whole); one that does not parse is
      // skipped, and its epoch stays taken.
      if (lease) return lease;
    }
    return null;
  }

  /**
   * Holds the project's lease for this host: renews it, or takes it when it is free, released or ran out more than
   * half a lease ago. Throws `ProjectHeldElsewhere` (naming the holder) when another host holds it.
   */
  hold(projectDir: string): Promise<Lease> {
    return this.serial(projectDir, () => this.holdNow(projectDir));
  }

  /** Whether this host holds the project now, as far as it knows. */
  holds(projectDir: string): boolean {
    const mine = this.held.get(projectDir);
    return !!mine && mine.until > this.now();
  }

  /** Renews the leases every third of a lease, while this host reaches Temporal. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => {
        if (!this.ticking) this.ticking = this.tick().finally(() => (this.ticking = null));
      },
      Math.max(200, Math.floor(this.opts.leaseMs / 3))
    );
    this.timer.unref();
  }

  /** Stops renewing and gives every lease up, so another host of the group takes the projects at once. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
    await Promise.all(
      [...this.held.keys()].map((p) =>
        this.serial(p, async () => {
          const mine = this.held.get(p);
          this.held.delete(p);
          const lease = await this.current(p);
          if (!mine || !lease || lease.hostId !== this.opts.hostId || lease.epoch !== mine.epoch) return;
          await this.write(p, { ...lease, until: this.now(), released: true }).catch(() => undefined);
        })
      )
    );
  }

  /** One renewal round: what another host took, or what ran out unrenewed, is given up here. */
  async tick(): Promise<void> {
    if (!this.held.size) return;
    // What ran out is given up before anything is awaited: a host cut off must stop before another may take over.
    await this.fenceExpired();
    const connected = await this.opts.connected().catch(() => false);
    await this.fenceExpired();
    for (const projectDir of [...this.held.keys()]) {
      await this.serial(projectDir, async () => {
        const mine = this.held.get(projectDir);
        if (!mine) return;
        const lease = await this.current(projectDir).catch(() => null);
        const ours = lease?.hostId === this.opts.hostId && lease.epoch === mine.epoch;
        // Never renewed once it ran out: another host may be taking it from then on.
        if (ours && connected && this.now() < mine.until) {
          const until = this.now() + this.opts.leaseMs;
          try {
            await this.write(projectDir, { ...lease, until });
            mine.until = until;
            return;
          } catch (err) {
            this.opts.warn?.('a project lease could not be renewed', { projectDir, error: String(err) });
          }
        }
        if (ours && this.now() < mine.until) return;
        // Taken by another host, or run out: nothing of this host may change the project any more.
        await this.lose(projectDir);
      });
    }
  }

  private async fenceExpired(): Promise<void> {
    const now = this.now();
    for (const [projectDir, mine] of [...this.held]) if (now >= mine.until) await this.lose(projectDir);
  }

  private async lose(projectDir: string): Promise<void> {
    if (!this.held.delete(projectDir)) return;
    await this.opts.onLost(projectDir).catch(() => undefined);
  }

  private serial<T>(projectDir: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(projectDir) ?? Promise.resolve()).then(fn);
    this.chains.set(
      projectDir,
      run.catch(() => undefined)
    );
    return run;
  }

  private async holdNow(projectDir: string): Promise<Lease> {
    const { hostId, leaseMs } = this.opts;
    for (let attempt = 0; attempt < 3; attempt++) {
      const lease = await this.current(projectDir);
      const now = this.now();
      const mine = this.held.get(projectDir);
      if (lease && lease.hostId === hostId && !lease.released && mine?.epoch === lease.epoch && lease.until > now) {
        // Held: renewed when a third of it is gone, so a busy host reads but seldom writes.
        if (lease.until - now < (leaseMs * 2) / 3) {
          const until = now + leaseMs;
          await this.write(projectDir, { ...lease, until });
          mine.until = until;
          return { ...lease, until };
        }
        return lease;
      }
      const free = !lease || lease.released || now > lease.until + leaseMs / 2 || lease.hostId === hostId;
      if (!free) throw heldElsewhere(lease);
      const next: Lease = { hostId, epoch: (lease?.epoch ?? 0) + 1, projectDir, until: now + leaseMs };
      if (!(await this.create(projectDir, next))) continue;
      // What this host's servers knew of the project may be stale: another host, or this one in an earlier
      // epoch, changed it since. They start afresh.
      this.held.set(projectDir, { epoch: next.epoch, until: next.until });
      await this.opts.onTaken?.(projectDir, lease);
      void this.prune(projectDir, next.epoch);
      return next;
    }
    const lease = await this.current(projectDir);
    if (lease && lease.hostId !== hostId) throw heldElsewhere(lease);
    throw new Error(`the lease on ${projectDir} kept changing hands`);
  }

  /** Makes the epoch's file, unless it exists: whether this host made it. */
  private async create(projectDir: string, lease: Lease): Promise<boolean> {
    const dir = this.dirOf(projectDir);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${lease.epoch}.${randomBytes(6).toString('hex')}.tmp`);
    await fs.writeFile(tmp, JSON.stringify(lease) + '\n', { mode: 0o600, flag: 'wx' });
    try {
      await fs.link(tmp, path.join(dir, epochFile(lease.epoch)));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  /** Rewrites this host's own epoch file whole. */
  private async write(projectDir: string, lease: Lease): Promise<void> {
    const dir = this.dirOf(projectDir);
    const tmp = path.join(dir, `.${lease.epoch}.${randomBytes(6).toString('hex')}.tmp`);
    await fs.writeFile(tmp, JSON.stringify(lease) + '\n', { mode: 0o600, flag: 'wx' });
    try {
      await fs.rename(tmp, path.join(dir, epochFile(lease.epoch)));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  private async epochs(dir: string): Promise<number[]> {
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch {
      return [];
    }
    return names
      .map((n) => EPOCH_FILE.exec(n))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
  }

  private async prune(projectDir: string, epoch: number): Promise<void> {
    const dir = this.dirOf(projectDir);
    for (const e of await this.epochs(dir))
      if (e < epoch - KEPT_EPOCHS) await fs.rm(path.join(dir, epochFile(e)), { force: true }).catch(() => undefined);
  }
}

const epochFile = (epoch: number) => `${String(epoch).padStart(12, '0')}.json`;

async function readLease(file: string): Promise<Lease | null> {
  try {
    const parsed = LeaseSchema.safeParse(JSON.parse(await fs.readFile(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
