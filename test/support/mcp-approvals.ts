/**
 * What a user does with `klea mcp approve`: approves what each stdio server of a configuration runs, as it is now
 * (runtime/mcp-approvals.ts). For tests whose subject is not the approval itself.
 */
import { configuredSpec, requireApproved, ServerConfigError } from '../../activities/mcp/servers';
import type { Config } from '../../common/config';
import { approve, readApprovals } from '../../runtime/mcp-approvals';

export function approveConfiguredServers(config: Config, env: NodeJS.ProcessEnv = process.env): void {
  for (const [name, server] of Object.entries(config.mcp.servers)) {
    if ('url' in server || server.disabled) continue;
    try {
      requireApproved(configuredSpec(name, server, config, env), env);
    } catch (err) {
      if (!(err instanceof ServerConfigError)) throw err;
      approve(name, readApprovals(env).pending[name].fingerprint, env);
    }
  }
}
