/** Host processes whose command line contains `token` (a sandbox that ended leaves none). */
import { readdirSync, readFileSync } from 'node:fs';

export function processesWith(token: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(token)) out.push(Number(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}
