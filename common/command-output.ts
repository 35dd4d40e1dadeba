/**
 * A command's output as a model is shown it (pure). Stack frames inside the runtime's own code say nothing of the
 * project: Node prints six of them under every uncaught error (`at Module._compile (node:internal/…)`), and its
 * version after them; Python's `<frozen …>` frames are the interpreter starting a module. With the 1.5B model on two
 * cores, each failed JavaScript check shown to a repair pick carried them, every round: prompt tokens and seconds.
 * The frames in the project's files, the error and its message stay.
 */

/** A stack frame in Node's own modules: `    at Module.load (node:internal/…)` or `    at node:internal/…`. */
const NODE_FRAME = /^[ \t]+at (?:.*\()?node:internal\/[^\n]*$/;
/** The version line Node ends an uncaught error with. */
const NODE_VERSION = /^Node\.js v\d+\.\d+\.\d+[ \t]*$/;
/** A frame of Python's frozen startup modules: `  File "<frozen runpy>", line 198, in _run_module_as_main`. */
const PYTHON_FROZEN = /^[ \t]+File "<frozen [^>\n]+>", line \d+, in [^\n]*$/;

/** `text` without those frames and Node's version line; a frame that opens the error's own fields keeps its `{`. */
export function withoutRuntimeFrames(text: string): string {
  return text
    .split('\n')
    .flatMap((l) => {
      if (NODE_VERSION.test(l) || PYTHON_FROZEN.test(l)) return [];
      if (NODE_FRAME.test(l)) return /\{[ \t]*$/.test(l) ? ['{'] : [];
      return [l];
    })
    .join('\n');
}
