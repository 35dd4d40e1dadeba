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
 *   let another host take its projects). A lease not renewed is free a whole `leaseMs` after its `until`; a holder
 *   whose lease is about to run out gives its projects up by a timer of its own (stops its workspace servers, with
 *   their commands, and a rewind it restores stops between files), before any other host may take them. That
 *   assumes the hosts' clocks agree within a lease.
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
  /** A lease nothing has used for this long is given up at the next renewal round (default 10 minutes). */
  idleMs?: number;
  now?: () => number;
  warn?(message: string, fields?: Record<string, unknown>): void;
}

const IDLE_MS = 10 * 60_000;

/** The failure a host that does not hold a group project's lease answers a changing activity with. */
export function heldElsewhere(lease: Lease): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `project ${lease.projectDir} is held by host ${lease.hostId} of its group (lease epoch ${lease.epoch})`,
    Failure.ProjectHeldElsewhere,
    { hostId: lease.hostId, epoch: lease.epoch }
  );
}

export class ProjectLeases {
  /**
   * The projects this host holds: the epoch of its lease, when it runs out, and the timer that gives it up then
   * (whatever else this process is doing), unless it is renewed first.
   */
  private readonly held = new Map<string, { epoch: number; until: number; fence: NodeJS.Timeout }>();
  /** What this host is doing with each project now, and when it last did anything (idle leases are given up). */
  private readonly use = new Map<string, { running: number; lastUsed: number }>();
  /** One change of a project's lease at a time in this process. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private readonly now: () => number;
  /** How long before its end a lease not renewed is given up here (the holder's servers take a moment to stop). */
  private readonly margin: number;

  constructor(private readonly opts: ProjectLeasesOptions) {
    this.now = opts.now ?? Date.now;
    this.margin = Math.min(1_000, Math.floor(opts.leaseMs / 6));
  }

  /** The directory of a project's lease files. */
  dirOf(projectDir: string): string {
    const key = createHash('sha256').update(projectDir).digest('hex').slice(0, 24);
    return path.join(this.opts.groupDir, 'leases', key);
  }

  /** The current lease of a project, or null (never taken). */
  async current(projectDir: string): Promise<Lease | null> {
    return (await this.read(projectDir)).lease;
  }

  /**
   * Holds the project's lease for this host: renews it, or takes it when it is free, released or ran out a whole
   * lease ago. Throws `ProjectHeldElsewhere` (naming the holder) when another host holds it.
   */
  async hold(projectDir: string): Promise<Lease> {
    const lease = await this.serial(projectDir, () => this.holdNow(projectDir));
    this.useOf(projectDir).lastUsed = this.now();
    return lease;
  }

  /** Runs `fn` (a change of the project) holding the lease; the lease is not given up as idle while it runs. */
  async using<T>(projectDir: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
    const lease = await this.hold(projectDir);
    const use = this.useOf(projectDir);
    use.running++;
    try {
      return await fn(lease);
    } finally {
      use.running--;
      use.lastUsed = this.now();
    }
  }

  /** Whether this host holds the project now, as far as it knows (what it does to the project stops when not). */
  holds(projectDir: string, epoch?: number): boolean {
    const mine = this.held.get(projectDir);
    return !!mine && (epoch === undefined || mine.epoch === epoch) && mine.until - this.margin > this.now();
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
          if (!mine) return;
          clearTimeout(mine.fence);
          this.held.delete(p);
          const lease = await this.current(p);
          if (!lease || lease.hostId !== this.opts.hostId || lease.epoch !== mine.epoch) return;
          await this.write(p, { ...lease, until: this.now(), released: true }).catch(() => undefined);
        })
      )
    );
  }

  /** One renewal round: what another host took, or what ran out unrenewed, is given up here. */
  async tick(): Promise<void> {
    if (!this.held.size) return;
    // What ran out is given up before anything is awaited (the timers do so too; this is for a clock that jumped).
    this.fenceExpired();
    const connected = await this.opts.connected().catch(() => false);
    this.fenceExpired();
    // Each project on its own: one whose lease is being taken (its old server stopping) delays no other's renewal.
    const renewals = [...this.held.keys()].map((projectDir) =>
      this.serial(projectDir, async () => {
        const mine = this.held.get(projectDir);
        if (!mine) return;
        // One that cannot be read now is left to its timer (renewed next round if the read works then).
        const lease = await this.current(projectDir);
        const ours = lease?.hostId === this.opts.hostId && lease.epoch === mine.epoch;
        if (!ours) return this.lose(projectDir, mine.epoch);
        // Unused for a while: given up, so the host's work and the group's leases stay bounded by what is in use.
        const use = this.use.get(projectDir);
        if (!use?.running && this.now() - (use?.lastUsed ?? 0) > (this.opts.idleMs ?? IDLE_MS)) {
          this.use.delete(projectDir);
          // Released only once this host's server for it has stopped: another host may take it at once.
          await this.lose(projectDir, mine.epoch);
          await this.write(projectDir, { ...lease, until: this.now(), released: true }).catch(() => undefined);
          return;
        }
        // Never renewed once it is about to run out: another host may take it from then on.
        if (!connected || !this.holds(projectDir)) return;
        try {
          await this.renew(projectDir, lease);
        } catch (err) {
          this.opts.warn?.('a project lease could not be renewed', { projectDir, error: String(err) });
        }
      }).catch((err: unknown) => {
        this.opts.warn?.('a project lease could not be read', { projectDir, error: String(err) });
      })
    );
    await Promise.all(renewals);
  }

  private useOf(projectDir: string): { running: number; lastUsed: number } {
    let use = this.use.get(projectDir);
    if (!use) this.use.set(projectDir, (use = { running: 0, lastUsed: 0 }));
    return use;
  }

  private fenceExpired(): void {
    for (const [projectDir, mine] of [...this.held])
      if (mine.until - this.margin <= this.now()) void this.lose(projectDir, mine.epoch);
  }

  /** Nothing of this host may change the project any more: forgotten at once, its servers stopped. */
  private lose(projectDir: string, epoch: number): Promise<void> {
    const mine = this.held.get(projectDir);
    if (!mine || mine.epoch !== epoch) return Promise.resolve();
    clearTimeout(mine.fence);
    this.held.delete(projectDir);
    return this.opts.onLost(projectDir).catch(() => undefined);
  }

  /** Keeps the project as held until `until`, and gives it up by itself a moment before then. */
  private keep(projectDir: string, epoch: number, until: number): void {
    const had = this.held.get(projectDir);
    if (had) clearTimeout(had.fence);
    const fence = setTimeout(() => void this.lose(projectDir, epoch), Math.max(0, until - this.margin - this.now()));
    fence.unref();
    this.held.set(projectDir, { epoch, until, fence });
  }

  /** Rewrites this host's lease with a new end; fails if the lease was given up meanwhile. */
  private async renew(projectDir: string, lease: Lease): Promise<Lease> {
    const until = this.now() + this.opts.leaseMs;
    await this.write(projectDir, { ...lease, until });
    // Given up while the file was written (its timer, or a tick): the renewal does not bring it back.
    if (this.held.get(projectDir)?.epoch !== lease.epoch)
      throw new Error(`the lease on ${projectDir} was given up while it was renewed`);
    this.keep(projectDir, lease.epoch, until);
    return { ...lease, until };
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
    // Held, with most of it left: no other host can have taken it (this one gives it up by its timer before any
    // may), so a busy host's calls do no I/O on the shared volume for it; the renewal rounds keep it so.
    const held = this.held.get(projectDir);
    if (held && this.holds(projectDir) && held.until - this.now() >= (leaseMs * 2) / 3)
      return { hostId, epoch: held.epoch, projectDir, until: held.until };
    for (let attempt = 0; attempt < 3; attempt++) {
      const { lease, top } = await this.read(projectDir);
      const now = this.now();
      const mine = this.held.get(projectDir);
      if (lease && lease.hostId === hostId && !lease.released && mine?.epoch === lease.epoch && this.holds(projectDir))
        // Held: renewed when a third of it is gone, so a busy host reads but seldom writes.
        return lease.until - now < (leaseMs * 2) / 3 ? this.renew(projectDir, lease) : lease;
      const free = !lease || lease.released || now > lease.until + leaseMs || lease.hostId === hostId;
      if (!free) throw heldElsewhere(lease);
      // The next epoch after every file there, read or not, so an unreadable one never blocks the project.
      const next: Lease = { hostId, epoch: top + 1, projectDir, until: now + leaseMs };
      if (!(await this.create(projectDir, next))) continue;
      // What this host's servers knew of the project may be stale: another host, or this one in an earlier
      // epoch, changed it since. They start afresh.
      this.keep(projectDir, next.epoch, next.until);
      await this.opts.onTaken?.(projectDir, lease);
      void this.prune(projectDir, next.epoch);
      return next;
    }
    const lease = await this.current(projectDir);
    if (lease && lease.hostId !== hostId) throw heldElsewhere(lease);
    throw new Error(`the lease on ${projectDir} kept changing hands`);
  }

  /** The newest lease that reads, and the highest epoch of any file there (0: none). */
  private async read(projectDir: string): Promise<{ lease: Lease | null; top: number }> {
    const dir = this.dirOf(projectDir);
    const epochs = await this.epochs(dir);
    const top = epochs.at(-1) ?? 0;
    for (const epoch of epochs.reverse()) {
      // A file half-written cannot be (each is renamed or linked into place whole); one that does not parse is
      // passed over, and its epoch stays taken.
      const lease = await readLease(path.join(dir, epochFile(epoch)));
      if (lease) return { lease, top };
    }
    return { lease: null, top };
  }

  /** Writes the lease to a temporary file beside the epoch files, to be linked or renamed into place whole. */
  private async tempOf(dir: string, lease: Lease): Promise<string> {
    const tmp = path.join(dir, `.${lease.epoch}.${randomBytes(6).toString('hex')}.tmp`);
    await fs.writeFile(tmp, JSON.stringify(lease) + '\n', { mode: 0o600, flag: 'wx' });
    return tmp;
  }

  /** Makes the epoch's file, unless it exists: whether this host made it. */
  private async create(projectDir: string, lease: Lease): Promise<boolean> {
    const dir = this.dirOf(projectDir);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = await this.tempOf(dir, lease);
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
    const tmp = await this.tempOf(dir, lease);
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
    } catch (err) {
      // Never taken; any other failure is thrown (read as "no lease", it would free a held project).
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
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

/**
 * An epoch's lease, or null when its file is gone or does not hold one. Any other failure to read it (an I/O error,
 * a stale handle) is thrown: taken for a free lease, it would let this host take a project another host holds.
 */
async function readLease(file: string): Promise<Lease | null> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const parsed = LeaseSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
