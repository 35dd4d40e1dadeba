/**
 * The small profile's moves (docs/models.md): a step that moves or copies the project's files into a folder is
 * carried out by one command Klea builds from what the model and the plan say, where the model's own command would
 * not do it.
 *
 * A small model aims a move at the wrong files: with the 0.5B model, moving the `.log` files of a folder into
 * `logs/` was run as `mv app.py logs/` (the first file of the listing), twice; with the 1.5B model, as
 * `mv app.py debug.log logs/notes.txt server.log worker.log`, and the files stayed where they were. What each part
 * says is sound on its own: the model's program (`mv` or `cp`) says whether the files move or are copied, the plan
 * says where they go (the files it names in the folder, or the folder), and the request which files, where it names
 * them by their kind (`.log`, `*.png`): a file of a kind it does not name stays (the 1.5B plan listed `notes.txt`
 * among the `.log` files to move). No word of the request is looked at: only file names and extensions.
 */
import { plainPath, plannedFiles, plannedFolders } from '../../common/plan';
import { globToRegExp } from '../../common/glob';
import { basename, isWithin } from '../../common/posix-path';
import type { PickedCall } from '../../common/tools';
import { namedFiles } from './named-files';
import { commandPrograms } from './shell-words';
import { copiesFiles, mirroredFiles, RUN_COMMAND, type CopyingStep } from './small-model';

const quoted = (path: string) => `'${path.replace(/'/g, `'\\''`)}'`;

/**
 * The extensions a text names files by, lowercased: `.log` in ".log files", `*.png`, "`.tmp`", ".txt-Dateien";
 * not the extension of a file it names (`config.yml`).
 */
export function mentionedKinds(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/(?<![\p{L}\p{N}_./-])\*?\.([A-Za-z][A-Za-z0-9]{0,7})(?![\p{L}\p{N}_.])/gu))
    out.add(m[1]!.toLowerCase());
  return [...out];
}

const kindOf = (path: string) => {
  const base = basename(path);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
};
const folderOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');

/** The files of `files` a word of a command names, as the shell in the project's folder reads it (`*.log`, `a.txt`). */
export function operandFiles(word: string, files: readonly string[]): string[] {
  const path = plainPath(word);
  if (!/[*?[{]/.test(path)) return files.includes(path) ? [path] : [];
  const re = globToRegExp(`/${path}`);
  return files.filter((f) => re.test(f));
}

/** What `movesForCommands` looks at of a step. */
export type MovingStep = CopyingStep & { id: string };

/** A file to move or copy, and where. */
interface Move {
  from: string;
  to: string;
}

/**
 * The moves a step's plan asks for: each file it names that mirrors one of the project's (the one of that name, or
 * the one of several the step names) from there; or, for a plan that names one folder and no file, each file of the
 * kinds the request names that is in a folder the model's command takes files from (`fromFolders`), into that
 * folder. A file of a kind the request does not name, where it names kinds, is left where it is, unless the request
 * names the file itself.
 */
export function plannedMoves(
  step: MovingStep,
  existing: readonly string[],
  request: string,
  fromFolders: readonly string[]
): Move[] {
  const kinds = mentionedKinds(request);
  const wanted = (f: string) => !kinds.length || kinds.includes(kindOf(f)) || namedFiles([f], request).length > 0;
  const files = existing.map(plainPath).filter((f) => f && !existing.includes(`${f}/`));
  const moves: Move[] = [];
  const mirrored = copiesFiles(step, files) ? mirroredFiles(plannedFiles(step), files) : [];
  if (mirrored.length) {
    for (const to of mirrored) {
      const sources = files.filter((f) => basename(f) === basename(to));
      const named = namedFiles(sources, `${step.title ?? ''}\n${step.instruction ?? ''}`);
      const from = sources.length === 1 ? sources[0] : named.length === 1 ? named[0] : undefined;
      if (from && wanted(from)) moves.push({ from, to });
    }
    return moves;
  }
  const folders = plannedFolders(step);
  if (folders.length !== 1 || plannedFiles(step).length || !kinds.length) return moves;
  const into = folders[0]!;
  for (const from of files) {
    if (!kinds.includes(kindOf(from)) || isWithin(into, from) || !fromFolders.includes(folderOf(from))) continue;
    moves.push({ from, to: `${into}/${basename(from)}` });
  }
  return moves;
}

/** The command that makes the moves' folders and moves (`mv`) or copies (`cp -P`) each file. */
export function moveCommand(moves: readonly Move[], program: 'mv' | 'cp'): string {
  const folders = [...new Set(moves.map((m) => folderOf(m.to)).filter(Boolean))];
  const verb = program === 'mv' ? 'mv --' : 'cp -P --';
  return [
    ...(folders.length ? [`mkdir -p -- ${folders.map(quoted).join(' ')}`] : []),
    ...moves.map((m) => `${verb} ${quoted(m.from)} ${quoted(m.to)}`),
  ].join(' && ');
}

/**
 * The calls with each `run_command` of a step that moves or copies the project's files (its program `mv`, `git mv`
 * or `cp`, one of them) made Klea's command for the moves its plan asks for (`plannedMoves`), where the model's
 * command leaves out a file to move or takes one the plan does not move (globs read as the shell reads them). A
 * command that does the moves already is kept as it is, as is every call where the plan asks for none. Not without
 * a complete listing (`existing`).
 */
export function movesForCommands(
  steps: readonly MovingStep[],
  calls: readonly PickedCall[],
  existing: readonly string[] | null,
  request: string | undefined
): { calls: PickedCall[]; repairs: Array<{ stepId: string; repair: string }> } {
  const repairs: Array<{ stepId: string; repair: string }> = [];
  if (!existing || !request) return { calls: [...calls], repairs };
  const files = existing.map(plainPath).filter((f) => f && !existing.includes(`${f}/`));
  const out: PickedCall[] = [];
  for (const call of calls) {
    const step = steps.find((s) => s.id === call.stepId);
    const command = call.qualifiedName === RUN_COMMAND ? call.args.command : undefined;
    const programs = typeof command === 'string' ? commandPrograms(command) : [];
    const kinds = new Set(programs.map((c) => c.program).filter((p) => p === 'mv' || p === 'cp'));
    if (!step || typeof command !== 'string' || kinds.size !== 1) {
      out.push(call);
      continue;
    }
    const [program] = [...kinds] as Array<'mv' | 'cp'>;
    const operands = programs
      .filter((c) => c.program === program)
      .flatMap((c) => c.args.filter((a) => !a.startsWith('-')).flatMap((a) => operandFiles(a, files)));
    const moves = plannedMoves(step, existing, request, [...new Set(operands.map(folderOf))]);
    const sources = new Set(moves.map((m) => m.from));
    const takenWrongly = operands.some((o) => !sources.has(o));
    const leftOut = [...sources].some((f) => !operands.includes(f));
    if (!sources.size || (!takenWrongly && !leftOut)) {
      out.push(call);
      continue;
    }
    out.push({ ...call, args: { ...call.args, command: moveCommand(moves, program) } });
    const what = moves.map((m) => `${m.from} → ${m.to}`).join(', ');
    repairs.push({
      stepId: call.stepId,
      repair: `\`${command.slice(0, 200)}\` made the moves the plan asks for: ${what}`,
    });
  }
  return { calls: out, repairs };
}
