/**
 * The small profile's copies (docs/models.md): a file a step is to copy or move is copied by a command, never
 * written from nothing.
 */
import { plainPath, plannedFiles } from '../../common/plan';
import { basename } from '../../common/posix-path';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { kindOf, mentionedKinds, namedFiles } from './named-files';
import { fileChanges } from './shell-words';
import { moveCommand } from './move-commands';
import { CHANGES_FILE, copiesFiles, RUN_COMMAND, stepText, type CopyingStep } from './small-model';

/** Files no text a model writes can be: images, archives, fonts, media, compiled code, databases. */
const BINARY =
  /\.(?:png|jpe?g|gif|webp|bmp|ico|tiff?|psd|pdf|zip|gz|tgz|bz2|xz|7z|rar|tar|jar|war|whl|woff2?|ttf|otf|eot|mp3|mp4|m4a|wav|ogg|flac|webm|mov|avi|mkv|bin|exe|dll|so|dylib|o|a|class|pyc|wasm|sqlite3?|db)$/i;

/**
 * The calls with each write the pick aims at a new file of a step that copies or moves the project's files
 * (`copiesFiles`), one its plan names, that mirrors a binary file of the project (`BINARY`, by its extension) made a
 * `run_command` that copies that file there (`mkdir -p` its folder first, `cp -P`: a link is copied as a link): the
 * one file of the project with its name, or the one of several the step's instruction names. A model's text can
 * only make such a file up: with the 1.5B model, moving two images into a folder was done by writing each anew with
 * a line of text the model guessed. A copy loses nothing: where the request wanted a move, the file copied is still
 * there to remove; a write after the step's own command that moved or copied the file is left out. A text file of
 * the same name is written as the model writes it (a README.md of its own in each of two folders is no copy of the
 * project's), unless the step names its kind (".md files"). Not without a complete listing (`existing`), nor where
 * `run_command` is not offered.
 */
export function copiesForWrites(
  steps: ReadonlyArray<CopyingStep & { id: string }>,
  calls: readonly PickedCall[],
  tools: readonly ToolDescriptor[],
  existing: readonly string[] | null
): { calls: PickedCall[]; repairs: Array<{ stepId: string; repair: string }> } {
  const runner = tools.find((t) => t.qualifiedName === RUN_COMMAND);
  const repairs: Array<{ stepId: string; repair: string }> = [];
  if (!runner || !existing) return { calls: [...calls], repairs };
  const have = new Set(existing.map(plainPath));
  const copied = new Set<string>();
  const out: PickedCall[] = [];
  for (const call of calls) {
    const step = steps.find((s) => s.id === call.stepId);
    const target = typeof call.args.path === 'string' ? plainPath(call.args.path) : null;
    const aimed =
      !!step &&
      !!target &&
      CHANGES_FILE.has(call.qualifiedName) &&
      (BINARY.test(target) || mentionedKinds(stepText(step)).includes(kindOf(target))) &&
      !have.has(target) &&
      plannedFiles(step).includes(target) &&
      // Judged as when the step began: a file it has copied already is no file the project had.
      copiesFiles(
        step,
        existing.filter((f) => !plannedFiles(step).includes(plainPath(f)))
      );
    if (!aimed) {
      out.push(call);
      continue;
    }
    const sources = existing.filter((f) => basename(f) === basename(target!));
    const named = namedFiles(sources, stepText(step));
    const source = sources.length === 1 ? sources[0] : named.length === 1 ? named[0] : undefined;
    if (!source) {
      out.push(call);
      continue;
    }
    // A command of the step's that already moved or copied the file there (`mv logo.png assets/img/` before it) did
    // the work: a copy after it would find no file to copy.
    const moved = out.some(
      (c) =>
        c.stepId === call.stepId &&
        c.qualifiedName === RUN_COMMAND &&
        typeof c.args.command === 'string' &&
        fileChanges(c.args.command, existing).written.includes(source)
    );
    if (moved || copied.has(`${call.stepId}\n${target}`)) continue;
    copied.add(`${call.stepId}\n${target}`);
    const command = moveCommand([{ from: source, to: target }], 'cp');
    const { stepDone } = call;
    out.push({
      stepId: call.stepId,
      server: runner.server,
      tool: runner.name,
      qualifiedName: RUN_COMMAND,
      args: { command },
      readOnly: runner.readOnly,
      idempotent: runner.idempotent,
      ...(stepDone === false ? { stepDone } : {}),
    });
    repairs.push({ stepId: call.stepId, repair: `${target}: copied from ${source} by a command, not written anew` });
  }
  return { calls: out, repairs };
}
