/**
 * The ports of the Temporal cluster on this machine (runtime/cluster.ts): PostgreSQL's, each Temporal service's
 * gRPC port and its membership port, `make cluster`'s defaults, and the list to check they are free first.
 */
import { findFreePort, portProblem } from './ports';

/** The Temporal server's services, in the order they start (history and matching before the frontend's clients). */
export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/**
 * A free port below 32768: Temporal keeps each service's membership port in a PostgreSQL smallint, so a port the
 * system hands out (above 32767) cannot be one.
 */
export async function freeMembershipPort(taken: ReadonlySet<number> = new Set()): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await portProblem(port, '127.0.0.1')) === null) return port;
  }
  throw new Error('no free port below 32768 for a Temporal membership port');
}

export interface ClusterPorts {
  postgres: number;
  /** The frontend's gRPC port: TEMPORAL_ADDRESS. */
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** Below 32768 (see `freeMembershipPort`). */
  membership: Record<TemporalService, number>;
}

/** `make cluster`'s ports: Temporal's usual ones, and PostgreSQL on 15432 (KLEA_CLUSTER_PG_PORT). */
export function defaultClusterPorts(frontend = 7233, env: NodeJS.ProcessEnv = process.env): ClusterPorts {
  return {
    postgres: Number(env.KLEA_CLUSTER_PG_PORT || 15432),
    frontend,
    frontendHttp: 7243,
    history: 7234,
    matching: 7235,
    worker: 7239,
    membership: { frontend: 6933, history: 6934, matching: 6935, worker: 6939 },
  };
}

/** Every port the cluster listens on, with what it is for (to check they are free first). */
export function clusterPortList(p: ClusterPorts): Array<[number, string]> {
  return [
    [p.postgres, 'PostgreSQL (KLEA_CLUSTER_PG_PORT)'],
    [p.frontend, 'Temporal frontend (TEMPORAL_ADDRESS)'],
    [p.frontendHttp, "Temporal frontend's HTTP API"],
    [p.history, 'Temporal history'],
    [p.matching, 'Temporal matching'],
    [p.worker, 'Temporal worker service'],
    ...TEMPORAL_SERVICES.map((s): [number, string] => [p.membership[s], `Temporal ${s} membership`]),
  ];
}

/** Free ports for a cluster beside anything else on this machine (the cluster tests' and the benchmark's). */
export async function freeClusterPorts(): Promise<ClusterPorts> {
  const ports: ClusterPorts = {
    postgres: await findFreePort(),
    frontend: await findFreePort(),
    frontendHttp: await findFreePort(),
    history: await findFreePort(),
    matching: await findFreePort(),
    worker: await findFreePort(),
    membership: { frontend: 0, history: 0, matching: 0, worker: 0 },
  };
  const taken = new Set<number>();
  for (const s of TEMPORAL_SERVICES) {
    ports.membership[s] = await freeMembershipPort(taken);
    taken.add(ports.membership[s]);
  }
  return ports;
}
