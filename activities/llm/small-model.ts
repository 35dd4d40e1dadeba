/**
 * The help a small model gets (`model.profile: small`, docs/models.md): pure functions, each applied only under that
 * profile. A `standard` model gets every tool in the server's order with its own schema, and its calls as made.
 *
 * None of them reads the words of a request: what they go by is the plan's structure (a step's `expect`), the
 * project's listing and the calls a step has made, so a request in any language gets the same help.
 *
 * - `suggestedTools`: the tools a step's plan says it needs, named in the pick's prompt.
 * - `narrowPaths`: a `path` the sent schema holds to files that exist, or to the new files a step names.
 * - whole-file writes (./file-content): a change to a file shown whole is written from plain text.
 * - `writesForUnchanged`: in a repair round or the first pick, a file the plan names that is still unchanged is
 *   written.
 * - `writesForFailure` (./repair-writes): in a repair round after a failed run, the file the failure is in is written.
 * - `writesForNewFiles`: a step that is only to create files gets them written without a pick (not copies or moves
 *   of files the project has: `copiesFiles`).
 * - `checksFirst`: a step whose plan only asks for a check runs the check as its first call, without a pick
 *   (not a check that pipes output into another command).
 * - `readsFirst`: a step that expects nothing reads a file its instruction names that no prompt could show.
 * - `readsBeforeBlindWrites`: a `write_file` over an existing file the model has not seen reads it first.
 * - moves (./move-commands): a `mv` or `cp` that takes the wrong files moves those the plan does.
 */
import {
  changesSomething,
  keepPlannedChanges,
  plainPath,
  plannedFiles,
  plannedFolders,
  type Plan,
  type StepExpect,
} from '../../common/plan';
import { basename } from '../../common/posix-path';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { isCut, isWhole, kindOf, mentionedKinds, namedFiles, type NamedFile } from './named-files';
import { piped } from './shell-words';
import type { OpenAIFunction } from './structured-output';

export const READ_FILE = 'workspace__read_file';
export const WRITE_FILE = 'workspace__write_file';
export const EDIT_FILE = 'workspace__edit_file';
export const RUN_COMMAND = 'workspace__run_command';

/** What `suggestedTools` looks at of a step. */
export interface SuggestStep extends CopyingStep {
  expect?: StepExpect;
  /** Files the step names that exist, shown whole or cut. */
  files?: ReadonlyArray<{ path: string; text: string }>;
  newFiles?: readonly string[];
}

/**
 * The new files a step is to create that have the name of a file the project has in another folder
 * (`logs/debug.log` beside `debug.log`). Only meaningful with a complete listing.
 */
export function mirroredFiles(newFiles: readonly string[], existing: readonly string[] | null | undefined): string[] {
  if (!existing?.length) return [];
  const names = new Set(existing.map(basename));
  const have = new Set(existing.map(plainPath));
  return newFiles.filter((f) => !have.has(plainPath(f)) && names.has(basename(f)));
}

/** What `copiesFiles` looks at of a step. */
export interface CopyingStep {
  title?: string;
  instruction?: string;
  expect?: StepExpect;
}

/** A step's title and instruction, the text of it that names files and kinds. */
export const stepText = (step: CopyingStep) => `${step.title ?? ''}\n${step.instruction ?? ''}`;

/**
 * Whether a step is to copy or move files the project has: every file its plan creates has the name of one the
 * project has in another folder, and there are several, or the step names the one it mirrors (`notes.txt` for
 * `archive/notes.txt`) or its kind (".md files": with the 1.5B model, a move of the `.md` files of a folder planned
 * one of them in the new folder, and it was written from nothing). Their content is that of the files they mirror,
 * which a command copies or moves whole and a write from nothing can only make up: a small model planned moving
 * files into a folder as creating each of them there, each was written as a placeholder line, and the files stayed
 * where they were. A lone file named as another (`docs/README.md`, `tests/__init__.py`) is a new file like any other.
 */

export function copiesFiles(step: CopyingStep, existing: readonly string[] | null | undefined): boolean {
  const planned = plannedFiles(step);
  const mirrored = mirroredFiles(planned, existing);
  if (!planned.length || mirrored.length < planned.length || !existing) return false;
  if (mirrored.length >= 2) return true;
  const sources = existing.filter((f) => mirrored.some((m) => basename(m) === basename(f)));
  const text = stepText(step);
  return namedFiles(sources, text).length > 0 || sources.some((f) => mentionedKinds(text).includes(kindOf(f)));
}

/**
 * The tools the step's plan says it needs, first the likeliest, named at the end of the step in the pick's prompt
 * (a small model leans to the first tool it is offered; the offered list itself keeps the server's order, so the
 * prompt's long stable part stays the same from pick to pick and the server's prompt cache holds it):
 * - writing (`write_file` for a new file, `edit_file` for an existing one) for a step that is to change files,
 *   after `run_command` when the new files are copies or moves of the project's (`copiesFiles`), or the step is to
 *   make, fill or remove a folder (`expect.changes` holds `logs/`);
 * - `run_command` for one with a check;
 * - `read_file` only where a file the step names is not shown whole.
 * None for a step with no `expect`: every tool is as likely.
 */
export function suggestedTools(
  tools: readonly ToolDescriptor[],
  step: SuggestStep,
  existing?: readonly string[] | null
): string[] {
  const wanted: string[] = [];
  const changes = plannedFiles(step);
  // A folder is made, filled or removed by a command.
  if (copiesFiles(step, existing) || plannedFolders(step).length) wanted.push(RUN_COMMAND);
  if (changes.length) {
    const creates = changes.some((c) => (step.newFiles ?? []).includes(c));
    wanted.push(...(creates ? [WRITE_FILE, EDIT_FILE] : [EDIT_FILE, WRITE_FILE]));
  }
  if (step.expect?.check) wanted.push(RUN_COMMAND);
  if (wanted.length && (step.files ?? []).some(isCut)) wanted.push(READ_FILE);
  const offered = new Set(tools.map((t) => t.qualifiedName));
  return [...new Set(wanted)].filter((n) => offered.has(n));
}

/** What a pick's paths may be held to. */
export interface PickPaths {
  /** Every file of the project, when the listing holds them all; else no path is held to a list. */
  existingFiles?: readonly string[] | null;
  /** The files the prompt shows whole to every step of the pick. */
  shownInFull?: ReadonlySet<string>;
  /** Files the steps name that are not in the project yet. */
  newFiles?: readonly string[];
  /** The files the steps' plan says they create or change (`expect.changes`): writes go there and nowhere else. */
  planned?: readonly string[];
}

/**
 * The functions with each `path` a small model would otherwise make up held to a list, when the whole listing is
 * known: `read_file` to the files not shown whole (unless every file is); `write_file` and `edit_file` to the files
 * the steps' plan is to change when it names them (a write elsewhere would be a side effect no one planned), else
 * `edit_file` to the files that exist and `write_file` (when the steps name new files) to those and the files shown
 * whole. Every tool stays offered. A model that is not held by a grammar may still call outside the list: the call
 * runs like any other.
 */
export function narrowPaths(fns: readonly OpenAIFunction[], paths: PickPaths): OpenAIFunction[] {
  const { existingFiles: existing, shownInFull = new Set<string>(), newFiles = [], planned = [] } = paths;
  if (!existing) return [...fns];
  const readable = existing.filter((f) => !shownInFull.has(f));
  const plannedEdits = planned.filter((f) => existing.includes(f));
  const writable = planned.length
    ? [...new Set(planned)]
    : newFiles.length
      ? [...new Set([...newFiles, ...shownInFull])]
      : null;
  const editable = planned.length ? plannedEdits : existing;
  const heldTo = (name: string): readonly string[] | null =>
    name === WRITE_FILE ? writable : name === READ_FILE ? readable : name === EDIT_FILE ? editable : null;
  return fns.map((f) => {
    const held = heldTo(f.function.name);
    const params = f.function.parameters as { properties?: Record<string, Record<string, unknown>> };
    const pathProp = params.properties?.path;
    if (!held?.length || !pathProp) return f;
    return {
      ...f,
      function: {
        ...f.function,
        parameters: { ...params, properties: { ...params.properties, path: { ...pathProp, enum: [...held] } } },
      },
    };
  });
}

/**
 * The writes `writesForUnchanged` made, which carry no content of their own: one the whole-file write cannot fill
 * is dropped, never sent as it is.
 */
export const PLANNED_WRITES = new WeakSet<PickedCall>();

/** A `write_file` of `path` for step `stepId` with no content yet, for the whole-file writes to fill (`PLANNED_WRITES`). */
export function plannedWrite(stepId: string, path: string): PickedCall {
  const write: PickedCall = {
    stepId,
    server: 'workspace',
    tool: 'write_file',
    qualifiedName: WRITE_FILE,
    args: { path, content: '' },
    readOnly: false,
    idempotent: true,
  };
  PLANNED_WRITES.add(write);
  return write;
}

/**
 * The whole-file writes of a long file shown in part (./file-part): its new lines put back into the file as it was
 * read, so not blind writes, though no prompt showed the file whole.
 */
export const PART_WRITES = new WeakSet<PickedCall>();

/** Tools whose call may change a file. */
const MAY_CHANGE = new Set([WRITE_FILE, EDIT_FILE, RUN_COMMAND]);
/** Tools whose call changes the one file its `path` names. */
export const CHANGES_FILE = new Set([WRITE_FILE, EDIT_FILE]);

/** What `writesForUnchanged` looks at of a step in a repair round. */
export interface RepairStep {
  id: string;
  /** The files of `expect.changes` its calls have not changed. */
  unchanged?: readonly string[];
  /** Files it names, shown whole or cut (`isCut`). */
  files?: ReadonlyArray<{ path: string; text: string }>;
  newFiles?: readonly string[];
}

/**
 * The calls of a repair round (or of the first pick, made with the plan, where nothing has changed yet) with, for
 * each step whose evidence says a file of its plan's `expect.changes` is not changed yet and whose pick changes
 * nothing (it reads or searches, again), a `write_file` of that file in place of those calls, for the whole-file
 * writes to write from plain text: a new file the step names, or an existing one the prompt shows (whole, or the
 * part the step is about) that the request itself names, when the request is not put as a question; in a session's
 * follow-up, a file named by Klea's last turn or the user's turn it answered ("Yes, do that." after a turn that
 * offered to change one). A plan may
 * name a file that a step only reads (a data file a question is about, a file the Planner took from the listing):
 * that file is changed only where the model aims a change at it. With the 1.5B model a step to change a long file
 * searched three times for a name the Planner had made up, and changed nothing. The write goes where the plan aimed
 * it, and through the permission gate like any other.
 */
export function writesForUnchanged(
  steps: readonly RepairStep[],
  calls: readonly PickedCall[],
  request = '',
  earlierTurns: readonly string[] = []
): PickedCall[] {
  let out = [...calls];
  const asked = isQuestion(request)
    ? []
    : namedFiles(
        steps.flatMap((s) => s.unchanged ?? []),
        [request, ...earlierTurns].join('\n')
      );
  for (const s of steps) {
    const own = out.filter((c) => c.stepId === s.id);
    if (!s.unchanged?.length || own.some((c) => MAY_CHANGE.has(c.qualifiedName))) continue;
    const shown = new Set((s.files ?? []).filter((f) => !isCut(f)).map((f) => plainPath(f.path)));
    // A folder (`logs/`) is never written as a file.
    const files = s.unchanged.filter((p) => !p.endsWith('/'));
    const target =
      files.find((p) => (s.newFiles ?? []).includes(p)) ??
      files.find((p) => shown.has(plainPath(p)) && asked.includes(p));
    if (!target) continue;
    out = [...out.filter((c) => c.stepId !== s.id), plannedWrite(s.id, target)];
  }
  return out;
}

/** What `writesForNewFiles` looks at of a step. */
export interface CreatingStep extends CopyingStep {
  id: string;
  expect?: StepExpect;
  /** Files the step names or plans that are not in the project yet. */
  newFiles?: readonly string[];
  earlierCalls?: ReadonlyArray<unknown>;
  notDone?: string;
}

/**
 * For each step that has made no call yet and whose plan says it only creates files (every file of its
 * `expect.changes` is new), a `write_file` of each of them, for the whole-file writes to fill: offered the tools, a
 * small model could only aim that call, and often aims another. The writes go where the plan aimed them, through the
 * permission gate like any other; a step whose write gets no content is picked as usual. Not a step that copies or
 * moves files the project has (`copiesFiles`, against `existing`, the project's files): it is picked.
 */
export function writesForNewFiles(steps: readonly CreatingStep[], existing?: readonly string[] | null): PickedCall[] {
  const calls: PickedCall[] = [];
  for (const s of steps) {
    const files = plannedFiles(s);
    const fresh = new Set(s.newFiles ?? []);
    if (!files.length || s.earlierCalls?.length || s.notDone || !files.every((f) => fresh.has(f))) continue;
    if (copiesFiles(s, existing)) continue;
    for (const path of new Set(files)) {
      calls.push(plannedWrite(s.id, path));
    }
  }
  return calls;
}

/** What `checksFirst` looks at of a step. */
export interface CheckingStep {
  id: string;
  expect?: StepExpect;
  earlierCalls?: ReadonlyArray<unknown>;
  notDone?: string;
}

/**
 * For each step that has made no call yet and whose plan asks only for a check (an `expect.check`, no files to
 * change), the check as its first call: a step that is to run something is done when that runs cleanly, and one
 * whose check fails goes to its next pick with the output in view, as after any call. Only where `run_command` is
 * offered (never with read-only access); it passes the permission gate like any command. Not a check that pipes
 * one command into another (`piped`): that works an answer out of output the Planner never saw, and exits as its
 * last command does whatever the first did.
 */
export function checksFirst(tools: readonly ToolDescriptor[], steps: readonly CheckingStep[]): PickedCall[] {
  const runner = tools.find((t) => t.qualifiedName === RUN_COMMAND);
  if (!runner) return [];
  return steps
    .filter((s) => s.expect?.check?.trim() && !piped(s.expect.check) && !changesSomething(s) && unstarted(s))
    .map((s) => callWithoutPick(runner, s.id, { command: s.expect!.check!.trim() }));
}

/** Whether a step has made no call yet and is not in a repair round. */
const unstarted = (s: CheckingStep) => !s.earlierCalls?.length && !s.notDone;

/** A call of `tool` for a step, made without a pick. */
export function callWithoutPick(tool: ToolDescriptor, stepId: string, args: Record<string, unknown>): PickedCall {
  const { server, name, qualifiedName, readOnly, idempotent } = tool;
  return { stepId, server, tool: name, qualifiedName, args, readOnly, idempotent };
}

/**
 * The plan with `files` left out of every step's `expect.changes`, and a repair line for each step that lost one:
 * the files the request does not ask to change (./asked-changes), which a step would otherwise be judged by, and
 * write over, as if it did.
 */
export function withoutChanges(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const dropped = new Set(files.map(plainPath));
  return keepPlannedChanges(plan, (c) => !dropped.has(plainPath(c)), 'which the request does not ask to change');
}

/**
 * Whether a request is put as a question: its last sentence ends with a question mark, in any script (`?`, the
 * full-width `？`, the Arabic `؟`). Not whether it asks for work ("could you fix it?" is one too): only a reason to
 * ask the model (./asked-changes) whether the files it names are to change.
 */
export function isQuestion(request: string): boolean {
  return /[?？؟][\s"'»”’)\]]*$/u.test(request.trim());
}

/** What `readsFirst` looks at of a step. */
export interface ReadingStep extends CheckingStep {
  /** Files of the project its instruction names that the prompt cannot show whole (cut, or behind the gate). */
  unshown?: readonly string[];
}

/**
 * For each step that has made no call yet and whose plan expects nothing of it (it reads, searches or works
 * something out), a `read_file` of the first file its instruction names that the prompt cannot show whole, as its
 * first call, without a pick, the step left open for its pick to go on with the file in view: a file behind the
 * permission gate (a `.env`, say) is shown to no prompt until it is read, and a small model picks another file.
 * The read passes the permission gate like any other.
 */
export function readsFirst(tools: readonly ToolDescriptor[], steps: readonly ReadingStep[]): PickedCall[] {
  const reader = tools.find((t) => t.qualifiedName === READ_FILE);
  if (!reader) return [];
  return steps
    .filter((s) => !s.expect && s.unshown?.length && unstarted(s))
    .map((s) => ({ ...callWithoutPick(reader, s.id, { path: s.unshown![0] }), stepDone: false as const }));
}

/** What `readsBeforeBlindWrites` looks at of a step. */
export interface SeeingStep {
  id: string;
  /** Files it names, shown whole or cut (`isCut`). */
  files?: readonly NamedFile[];
  earlierCalls?: ReadonlyArray<{ tool: string; args: Record<string, unknown>; status: string }>;
}

/**
 * The calls with each `write_file` over an existing file the model has not seen (no prompt of the pick showed it
 * whole, and the step has not read it), and each `edit_file` of one no prompt showed at all (a long file shown in
 * part is seen), made a `read_file` of that file, the step left open: its next pick sees the file and may change it
 * then. A small model told to change a file behind the permission gate (a `.env`) wrote it blind, five lines
 * replaced by one; or edited it blind, its guessed `old_string` "DEBUG" made "false", and `DEBUG=true` became
 * `false=true`. Known only with the whole listing; the read passes the permission gate like any other. With a
 * repair line for each.
 */
export function readsBeforeBlindWrites(
  steps: readonly SeeingStep[],
  calls: readonly PickedCall[],
  tools: readonly ToolDescriptor[],
  existingFiles: readonly string[] | null
): { calls: PickedCall[]; repairs: Array<{ stepId: string; repair: string }> } {
  const reader = tools.find((t) => t.qualifiedName === READ_FILE);
  if (!reader || !existingFiles) return { calls: [...calls], repairs: [] };
  const existing = new Set(existingFiles);
  const shownBy = (keep: (f: NamedFile) => boolean) =>
    new Set(steps.flatMap((s) => (s.files ?? []).filter(keep).map((f) => plainPath(f.path))));
  const shown = { [WRITE_FILE]: shownBy(isWhole), [EDIT_FILE]: shownBy((f) => !isCut(f)) };
  const repairs: Array<{ stepId: string; repair: string }> = [];
  const out = calls.map((c) => {
    const path = typeof c.args.path === 'string' ? plainPath(c.args.path) : null;
    const seen = shown[c.qualifiedName as keyof typeof shown];
    if (!seen || !path || !existing.has(path) || seen.has(path) || PART_WRITES.has(c)) return c;
    const step = steps.find((s) => s.id === c.stepId);
    const read = (step?.earlierCalls ?? []).some(
      (e) =>
        e.tool === READ_FILE && e.status === 'ok' && typeof e.args.path === 'string' && plainPath(e.args.path) === path
    );
    if (read) return c;
    repairs.push({ stepId: c.stepId, repair: `${c.tool} on ${path}, which the model had not seen: read it first` });
    return { ...callWithoutPick(reader, c.stepId, { path }), stepDone: false as const };
  });
  return { calls: out, repairs };
}
