/** Reads `klea.yaml` (KLEA_CONFIG, else ./klea.yaml, else defaults) and the environment into a valid Config. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { Config } from '../common/config';
import { ConfigError, resolveConfig } from '../common/config-resolve';

export interface LoadedConfig {
  config: Config;
  /** The file read, or null when only defaults and the environment apply. */
  file: string | null;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LoadedConfig {
  const explicit = env.KLEA_CONFIG;
  const file = explicit ? path.resolve(cwd, explicit) : path.resolve(cwd, 'klea.yaml');
  if (explicit && !existsSync(file)) throw new ConfigError(`KLEA_CONFIG: file not found: ${file}`);
  if (!existsSync(file)) return { config: absolutise(resolveConfig({}, env, 'defaults'), cwd), file: null };

  const name = path.relative(cwd, file) || file;
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const where = err.linePos?.[0] ? ` (line ${err.linePos[0].line}, column ${err.linePos[0].col})` : '';
      throw new ConfigError(`${name}: not valid YAML${where}: ${err.message.split('\n')[0]}`);
    }
    throw err;
  }
  if (raw !== null && raw !== undefined && (typeof raw !== 'object' || Array.isArray(raw))) {
    throw new ConfigError(`${name}: expected a mapping of settings at the top level`);
  }
  return { config: absolutise(resolveConfig(raw ?? {}, env, name), cwd), file };
}

function absolutise(config: Config, cwd: string): Config {
  config.project.dir = path.resolve(cwd, config.project.dir);
  config.project.allowed_roots = config.project.allowed_roots.map((r) => path.resolve(cwd, r));
  return config;
}

/** For process entry points: load the config or print the one-line reason and exit 1. */
export function loadConfigOrExit(processName: string): LoadedConfig {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${processName}: configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
