/**
 * Processes started by `make start` watch their parent: if the supervisor disappears without stopping them
 * (killed with SIGKILL, say), they stop themselves instead of lingering as orphans.
 */
export function exitWithParent(onOrphaned: () => void): void {
  if (process.env.KLEA_SUPERVISED !== '1') return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onOrphaned();
    }
  }, 500);
  timer.unref();
}
