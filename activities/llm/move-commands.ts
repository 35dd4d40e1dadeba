/**
 * The small profile's moves (docs/models.md): a step that moves or copies the project's files into a folder is
 * carried out by one command Klea builds from what the model and the plan say, where the model's own command would
 * not do it.
 *
 * A small model aims a move at the wrong files: with the 0.5B model, moving the `.log` files of a folder into
 * `logs/` was run as `mv app.py logs/` (the first file of the listing), twice; with the 1.5B model, as
 * `mv app.py debug.log logs/notes.txt server.log worker.log`, and the files stayed where they were. What each part
 * says is sound on its own: the model's program (`mv` or `cp`) says whether the files move or are copied, the plan
 * says where they go (the files it names in the folder, or the folder), and the step which files, where it names
 * them by their kind as the request does (`.log`, `*.png`): a file of another kind stays (the 1.5B plan listed
 * `notes.txt` among the `.log` files to move). No word of the request is looked at: only file names and extensions.
 */
import { plainPath, plannedFiles, plannedFolders, type Plan } from '../../common/plan';
import { globToRegExp } from '../../common/glob';
import { basename, isWithin, parentFolders } from '../../common/posix-path';
import type { PickedCall } from '../../common/tools';
import { kindOf, mentionedKinds, namedFiles } from './named-files';
import { withoutPlanned } from './plan-files';
import { commandPrograms, shellQuoted } from './shell-words';
import { copiesFiles, mirroredFiles, RUN_COMMAND, stepText, type CopyingStep } from './small-model';

const folderOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');

/**
 * The files of `files` a word of a command names, as the shell in the project's folder reads it: `a.txt`, and a
 * glob (`*.log`, `docs/?.md`) within one folder, whose `*` and `?` take no name's leading dot.
 */
export function operandFiles(word: string, files: readonly string[]): string[] {
  const path = plainPath(word);
  if (!/[*?[]/.test(path)) return files.includes(path) ? [path] : [];
  const parts = path.replace(/\*\*+/g, '*').split('/');
  const re = globToRegExp(`/${parts.join('/')}`);
  return files.filter((f) => {
    const segs = f.split('/');
    return (
      re.test(f) &&
      segs.length === parts.length &&
      segs.every((s, i) => !s.startsWith('.') || parts[i]!.startsWith('.'))
    );
  });
}

/** What `movesForCommands` looks at of a step. */
export type MovingStep = CopyingStep & { id: string };

/** A file to move or copy, and where. */
export interface Move {
  from: string;
  to: string;
}

/**
 * The kinds of file a step moves: those its title or instruction names that the request names too, or the one kind
 * the request names. Not a dotfile's name (`.env` is a file of the project, not a kind).
 */
function stepKinds(step: MovingStep, request: string, files: readonly string[]): string[] {
  const dotfiles = new Set(files.map(basename).filter((b) => b.startsWith('.')));
  const asked = mentionedKinds(request).filter((k) => !dotfiles.has(`.${k}`));
  const own = mentionedKinds(stepText(step)).filter((k) => asked.includes(k));
  return own.length ? own : asked.length === 1 ? asked : [];
}

/**
 * The moves a step's plan asks for: each file it names that mirrors one of the project's (the one of that name, or
 * the one of several the step names) from there; or, for a plan that names one folder and no file, each file of the
 * step's kinds (`stepKinds`) in a folder the model's command takes files from (`fromFolders`), into that folder. A
 * file of another kind, where the step has kinds, is left where it is, unless the request names the file itself.
 * None where a move would land on a file the project has or on another move's file, or outside the project.
 */
export function plannedMoves(
  step: MovingStep,
  files: readonly string[],
  request: string,
  fromFolders: readonly string[]
): Move[] {
  const kinds = stepKinds(step, request, files);
  const wanted = (f: string) => !kinds.length || kinds.includes(kindOf(f)) || namedFiles([f], request).length > 0;
  let moves: Move[] = [];
  const mirrored = copiesFiles(step, files) ? mirroredFiles(plannedFiles(step), files) : [];
  const folders = plannedFolders(step);
  if (mirrored.length) {
    for (const to of mirrored) {
      const sources = files.filter((f) => basename(f) === basename(to));
      const named = namedFiles(sources, stepText(step));
      const from = sources.length === 1 ? sources[0] : named.length === 1 ? named[0] : undefined;
      if (from && wanted(from)) moves.push({ from, to });
    }
  } else if (folders.length === 1 && !plannedFiles(step).length && kinds.length) {
    const into = folders[0]!;
    // A name with a leading dot only where the request names it: `*.log` leaves `.hidden.log` where it is.
    const hidden = (f: string) => basename(f).startsWith('.') && !namedFiles([f], request).length;
    moves = files
      .filter((f) => kinds.includes(kindOf(f)) && !hidden(f) && !isWithin(into, f) && fromFolders.includes(folderOf(f)))
      .map((from) => ({ from, to: `${into}/${basename(from)}` }));
  }
  const targets = moves.map((m) => m.to);
  const unsafe = (t: string) => files.includes(t) || t.startsWith('/') || t.split('/').includes('..');
  return targets.some(unsafe) || new Set(targets).size < targets.length ? [] : moves;
}

/**
 * The plan with each file a step moves or copies (a planned file that mirrors one of the project's: `copiesFiles`)
 * left out of its `expect.changes` where every file it could come from is of a kind the request does not name, in a
 * step that has kinds (`stepKinds`), and the request names neither it nor them; a step that would then copy no more
 * (`copiesFiles`: one file left, which it does not name) is left as it is. With the
 * 1.5B model, `logs/notes.txt` was planned among the `.log` files to move into `logs/`: the three logs were moved,
 * and the step, not done without the fourth, wrote a `logs/notes.txt` of its own.
 */
export function movesOfOtherKinds(
  plan: Plan,
  request: string,
  files: readonly string[]
): { plan: Plan; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const kinds = stepKinds(s, request, files);
    if (!kinds.length || !copiesFiles(s, files)) return s;
    // Of no kind the request names, and not named by it (by the file's name or the new path).
    const asked = mentionedKinds(request);
    const named = (f: string) => namedFiles([f], request).length > 0 || request.includes(f);
    const other = mirroredFiles(plannedFiles(s), files).filter(
      (to) =>
        !named(to) && files.every((f) => basename(f) !== basename(to) || (!asked.includes(kindOf(f)) && !named(f)))
    );
    // A step left with one file of its own is no copy any more (`copiesFiles`): it would be written from nothing.
    if (!other.length || !copiesFiles(withoutPlanned(s, other), files)) return s;
    repairs.push(
      `step "${s.id}": expect.changes named ${other.join(', ')}, copies of files of another kind than those it moves: left out`
    );
    return withoutPlanned(s, other);
  });
  return { plan: { ...plan, steps }, repairs };
}

/** The command that makes the moves' folders and moves (`mv`, `git mv`) or copies (`cp -P`) each file. */
export function moveCommand(moves: readonly Move[], program: 'mv' | 'cp' | 'git mv'): string {
  const folders = [...new Set(moves.map((m) => folderOf(m.to)).filter(Boolean))];
  const verb = program === 'cp' ? 'cp -P --' : `${program} --`;
  return [
    ...(folders.length ? [`mkdir -p -- ${folders.map(shellQuoted).join(' ')}`] : []),
    ...moves.map((m) => `${verb} ${shellQuoted(m.from)} ${shellQuoted(m.to)}`),
  ].join(' && ');
}

/** Programs a line may hold beside its moves for Klea's command to stand for the whole line. */
const BESIDE = new Set(['mv', 'cp', 'mkdir', 'ls', 'echo', 'true']);

/**
 * A move or copy line as Klea reads it: its program, and the project files its commands take (their sources: not the
 * folder or file they go to); null where Klea cannot tell what it takes or its command would not stand for the line
 * (another program, a `cd`, a redirect, a variable or a substitution, a folder moved whole, both `mv` and `cp`).
 */
function readMoves(
  command: string,
  files: readonly string[]
): { program: 'mv' | 'cp' | 'git mv'; from: string[]; makes: string[]; into: string[] } | null {
  const programs = commandPrograms(command);
  const moving = programs.filter((c) => c.program === 'mv' || c.program === 'cp');
  const kinds = new Set(moving.map((c) => (c.git ? 'git mv' : c.program)));
  if (kinds.size !== 1 || programs.some((c) => !BESIDE.has(c.program) || c.redirects)) return null;
  const folders = new Set(files.flatMap(parentFolders));
  const from: string[] = [];
  const into: string[] = [];
  for (const c of moving) {
    const words = c.args.filter((a) => !a.startsWith('-'));
    const target = c.args.findIndex((a) => a === '-t' || a === '--target-directory');
    const joined = c.args.some((a) => /^(?:--target-directory=|-t.)/.test(a));
    const sources = joined ? words : target >= 0 ? words.filter((w) => w !== c.args[target + 1]) : words.slice(0, -1);
    if (sources.some((w) => /[$`]/.test(w) || folders.has(plainPath(w)))) return null;
    from.push(...sources.flatMap((w) => operandFiles(w, files)));
    // Where they go: the folder named (`-t logs`, `logs/`), or the one a file is renamed into.
    const given =
      c.args.find((a) => /^--target-directory=/.test(a))?.slice(19) ?? c.args.find((a) => /^-t./.test(a))?.slice(2);
    const last = target >= 0 ? c.args[target + 1] : (given ?? words.at(-1));
    if (last !== undefined)
      into.push(target >= 0 || given || last.endsWith('/') ? plainPath(last) : folderOf(plainPath(last)));
  }
  // The folders the line makes itself (`mkdir -p logs && mv …`).
  const makes = programs
    .filter((c) => c.program === 'mkdir')
    .flatMap((c) => c.args.filter((a) => !a.startsWith('-')).map(plainPath));
  return { program: [...kinds][0] as 'mv' | 'cp' | 'git mv', from, makes, into };
}

/**
 * The calls with each `run_command` of a step that moves or copies the project's files (`readMoves`) made Klea's
 * command for the moves its plan asks for (`plannedMoves`), where the model's command takes a file the plan does not
 * move and that is neither of the step's kinds nor named by the request (globs read as the shell reads them; only
 * the files it takes are compared, not where it puts them). A command that takes no wrong file runs as the model
 * wrote it, the folder it moves into made first where the project does not have it yet. Another move of the same
 * step in the same pick after Klea's command is left out. Left as written: a move of two or more files none of the
 * step's kinds where the plan names a folder (a request to move all but a kind), and a command run in another
 * folder (`cwd`); and nothing without a complete listing (`existing`).
 */
export function movesForCommands(
  steps: readonly MovingStep[],
  calls: readonly PickedCall[],
  existing: readonly string[] | null,
  request: string | undefined
): { calls: PickedCall[]; repairs: Array<{ stepId: string; repair: string }> } {
  const repairs: Array<{ stepId: string; repair: string }> = [];
  if (!existing || !request) return { calls: [...calls], repairs };
  const files = existing.map(plainPath);
  const out: PickedCall[] = [];
  const moved = new Map<string, number>();
  for (const call of calls) {
    const step = steps.find((s) => s.id === call.stepId);
    const command = call.qualifiedName === RUN_COMMAND ? call.args.command : undefined;
    const cwd = typeof call.args.cwd === 'string' ? plainPath(call.args.cwd) : '';
    const read = step && typeof command === 'string' && !cwd ? readMoves(command, files) : null;
    if (!step || !read) {
      out.push(call);
      continue;
    }
    const kinds = stepKinds(step, request, files);
    const theirs = (f: string) => kinds.includes(kindOf(f)) || namedFiles([f], request).length > 0;
    // After Klea's command for the step, another move of it in the pick is left out (its word on whether the step is
    // done goes to Klea's command).
    const replaced = moved.get(step.id);
    if (replaced !== undefined) {
      const { stepDone: _was, ...rest } = out[replaced]!;
      out[replaced] = call.stepDone === false ? { ...rest, stepDone: false } : rest;
      continue;
    }
    // Files of another kind only, where the plan names a folder and no file: a move that leaves the step's kinds out
    // ("all but the .txt files") as much as a wrong one. Two or more such files are the model's choice; one (the
    // listing's first file) is taken for a mistake.
    if (!copiesFiles(step, files) && read.from.length >= 2 && !read.from.some(theirs)) {
      out.push(call);
      continue;
    }
    const moves = plannedMoves(step, files, request, [...new Set(read.from.map(folderOf))]);
    const sources = new Set(moves.map((m) => m.from));
    const wrong = read.from.some((f) => !sources.has(f) && !theirs(f));
    const made = (d: string) => !d || files.some((f) => isWithin(d, f)) || read.makes.some((m) => isWithin(d, m));
    // A command that takes no wrong file is the model's, even where it leaves one of the plan's for later (a small
    // Planner's plan can be wrong too: the 0.5B model planned docs/setup.md moved up into the project's root, where
    // the model's command moved docs/intro.md into docs/guide/ as asked). The folder it moves into is made first
    // where the project does not have it: `mv shot1.jpg images/` failed on it again and again (the 1.5B model).
    if (!moves.length || !wrong) {
      const missing = moves.length ? [...new Set(read.into.filter((d) => !made(d)))] : [];
      if (!missing.length) {
        out.push(call);
        continue;
      }
      out.push({
        ...call,
        args: { ...call.args, command: `mkdir -p -- ${missing.map(shellQuoted).join(' ')} && ${command}` },
      });
      repairs.push({
        stepId: call.stepId,
        repair: `${missing.join(', ')}: made before \`${String(command).slice(0, 200)}\``,
      });
      continue;
    }
    // Only the plan's moves (`plannedMoves` keeps none that would land on a file): a file of the step's kinds the
    // model took beside them stays where it is. With the 1.5B model, a step planned to move notes/c.csv took a.csv
    // too, the file of another step.
    moved.set(step.id, out.length);
    out.push({ ...call, args: { ...call.args, command: moveCommand(moves, read.program) } });
    const what = moves.map((m) => `${m.from} → ${m.to}`).join(', ');
    repairs.push({
      stepId: call.stepId,
      repair: `\`${String(command).slice(0, 200)}\` made the moves the plan asks for: ${what}`,
    });
  }
  return { calls: out, repairs };
}
