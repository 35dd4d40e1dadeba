/**
 * The small profile's copies (docs/models.md): a file a step is to copy or move is copied by a command, never
 * written from nothing.
 */
import { plainPath } from '../../common/plan';
import { basename } from '../../common/posix-path';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { namedFiles } from './named-files';
import { CHANGES_FILE, copiesFiles, RUN_COMMAND, type CopyingStep } from './small-model';

const quoted = (path: string) => `'${path.replace(/'/g, `'\\''`)}'`;

/**
 * The calls with each write the pick aims at a new file of a step that copies or moves the project's files
 * (`copiesFiles`) made a `run_command` that copies the file it mirrors there (`mkdir -p` its folder first): the one
 * file of the project with its name, or the one of several the step's instruction names. Its content is that file's,
 * which a write from nothing can only make up: with the 1.5B model, moving two images into a folder was done by
 * writing each anew with a line of text the model guessed, and the images stayed where they were. A copy loses
 * nothing: where the request wanted a move, the file it copied is still there for the step (or the user) to remove.
 * Not without a complete listing (`existing`), nor where `run_command` is not offered.
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
    if (!step || !target || !CHANGES_FILE.has(call.qualifiedName) || have.has(target) || !copiesFiles(step, existing)) {
      out.push(call);
      continue;
    }
    const sources = existing.filter((f) => basename(f) === basename(target));
    const named = namedFiles(sources, `${step.title ?? ''}\n${step.instruction ?? ''}`);
    const source = sources.length === 1 ? sources[0] : named.length === 1 ? named[0] : undefined;
    if (!source) {
      out.push(call);
      continue;
    }
    if (copied.has(target)) continue;
    copied.add(target);
    const folder = target.includes('/') ? target.slice(0, target.lastIndexOf('/')) : '';
    const command = `${folder ? `mkdir -p -- ${quoted(folder)} && ` : ''}cp -- ${quoted(source)} ${quoted(target)}`;
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
