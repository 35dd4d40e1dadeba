/**
 * The `asks_changes` and `wants_changes` nodes (the small profile, docs/models.md): what carrying out the user's
 * request does to a file of the project, and whether the user wants it edited, moved or deleted.
 *
 * A small Planner gets a request's files wrong both ways. It names the file a question is about in `expect.changes`
 * (a question about a file's contents planned as a change to that file), and the step then writes over the user's
 * data: `keepAskedChanges` (so it does with the data file a new script is to read). And it plans the work a request
 * asks of a file without the file (a document to rewrite, planned as reading it; a script to fix, as running its
 * commands by hand): `wantedChanges`. Asked on its own, the
 * same model leans one way or the other with the wording, so a verdict is taken only where the plan is already in
 * doubt: a question's plan that would change a file is only ever made to leave the change out, and a plan that
 * changes nothing at all is only ever planned again. No word of the request is looked at here.
 */
import { z } from 'zod';
import { addUsage, ZERO_USAGE, type ModelUsage } from '../../common/model-protocol';
import { parentFolders } from '../../common/posix-path';
import { changesSomething, plannedFiles, plannedFolders, type Plan } from '../../common/plan';
import type { ModelClient } from './model';
import { escape, namedFiles } from './named-files';
import { isProgram } from './file-content';
import { isDataFile } from './program';
import { isQuestion, withoutChanges } from './small-model';

export const ASKS_CHANGES_SYSTEM = `You read a request a user gave a coding agent, and say what carrying it out does to one file of the
project. Answer with JSON only.`;

/** What carrying out the request does to the file, as the model sees it. */
const EFFECTS = ['reads it', 'runs it', 'changes it', 'moves or deletes it'] as const;
const AnswerSchema = z.strictObject({ effect: z.enum(EFFECTS) });

export function asksChangesPrompt(request: string, file: string) {
  return {
    node: 'asks_changes' as const,
    system: ASKS_CHANGES_SYSTEM,
    messages: [`Request: ${request}\n\nWhat does carrying out this request do to ${file}?`],
  };
}

/**
 * Whether a request asks a question anywhere: one of its sentences ends with a question mark ("Which file defines
 * it? The code is in several folders." as much as "Why does it fail? Fix it."), in any script (a full-width `？`
 * ends a sentence wherever it stands, and French puts a space before `?`; a `?` in a URL, after a sign (`$?`,
 * `= ?`) or in quoted or backticked text does not). A question with a sentence after it was planned as
 * a change to the data file it asks about, and the file was written over. A request for work with a question in it
 * gets the model's verdict on each file too; a file it leaves out is not planned back in by `wantedChanges`.
 */
export function asksQuestion(request: string): boolean {
  const own = request.replace(/`[^`]*`|"[^"\n]*"|“[^”\n]*”|«[^»\n]*»/g, ' ').trim();
  return isQuestion(request) || /[？؟]|[\p{L}\p{N})'’»”][ \u00a0\u202f]?\?(?:[\s)\]]|$)/u.test(own);
}

async function ask(model: ModelClient, request: string, file: string) {
  const { value, usage } = await model.structured(
    asksChangesPrompt(request, file),
    AnswerSchema,
    'Say what carrying out the request does to the file.'
  );
  return { changes: value.effect === 'changes it' || value.effect === 'moves or deletes it', usage };
}

/** Data kinds that are configuration as often as input (`package.json`, `config.yaml`): a script may be added to them. */
const CONFIG_KIND = /\.(?:json|ya?ml|xml|toml)$/i;

/**
 * The data files of the project (./program's kinds, but for those that are as often configuration) that the request
 * names and that the plan is to change, where it is to create a new program too (in that step or another): the input
 * the new script reads, in doubt as a change. A small Planner planned "write top_customer.py that reads orders.csv"
 * as a change to orders.csv in one step and the script in another, and the step edited the data's header; so it did
 * for a script that averages a CSV file (a task written to look at).
 */
export function scriptInputs(plan: Plan, request: string, projectFiles: readonly string[]): string[] {
  const existing = new Set(projectFiles);
  const named = new Set(namedFiles(projectFiles, request).filter((f) => isDataFile(f) && !CONFIG_KIND.test(f)));
  const planned = plan.steps.flatMap((s) => plannedFiles(s));
  if (!planned.some((f) => !existing.has(f) && isProgram(f, null))) return [];
  return [...new Set(planned.filter((f) => named.has(f)))];
}

/**
 * The plan with each file in doubt as a change left out of the steps' `expect.changes` where carrying the request
 * out only reads or runs it, as the model judges it: for a request that asks a question (`asksQuestion`, anywhere in
 * it), each file of the project the plan would change (a file the plan would create is left as planned); for any
 * other, the data files a new script reads (`scriptInputs`). A question's folders of the project that the request
 * does not name are left out without asking (`unnamedFolders`). With the model calls made for it and what was left
 * out, for the plan's repairs.
 */
export async function keepAskedChanges(
  model: ModelClient,
  request: string,
  plan: Plan,
  projectFiles: readonly string[]
): Promise<{ plan: Plan; usage: ModelUsage; modelCalls: number; repairs: string[]; notAsked: string[] }> {
  const existing = new Set(projectFiles);
  const question = asksQuestion(request);
  const planned = question
    ? [...new Set(plan.steps.flatMap((s) => plannedFiles(s)))].filter((f) => existing.has(f))
    : scriptInputs(plan, request, projectFiles);
  const folders = question ? unnamedFolders(plan, request, projectFiles) : [];
  if (!planned.length && !folders.length) return { plan, usage: ZERO_USAGE, modelCalls: 0, repairs: [], notAsked: [] };
  let usage = ZERO_USAGE;
  const notAsked: string[] = [...folders];
  for (const file of planned) {
    const one = await ask(model, request, file);
    usage = addUsage(usage, one.usage);
    if (!one.changes) notAsked.push(file);
  }
  const kept = withoutChanges(plan, notAsked);
  return { ...kept, usage, modelCalls: planned.length, notAsked };
}

/**
 * The folders of the project (those that hold its files) that a question's plan is to change and the request does
 * not name: a question asks nothing of them, and its step could only be judged not done. Left out without asking the
 * model: asked what carrying out "Where is it defined? …" does to the folder, and to the file, the 0.5B model said
 * "changes it" of both. A small Planner wrote the folders of the path it was told a definition is at as its
 * question's `changes` (`billing`, `core`, …), and the step, which could only read, ended not achieved.
 */
export function unnamedFolders(plan: Plan, request: string, projectFiles: readonly string[]): string[] {
  const existing = new Set(projectFiles.flatMap(parentFolders));
  const named = (folder: string) => new RegExp(`(?<![\\w./-])${escape(folder)}(?![\\w-]|\\.\\w)`, 'u').test(request);
  return [...new Set(plan.steps.flatMap(plannedFolders))].filter((f) => existing.has(f) && !named(f));
}

export const WANTS_CHANGES_SYSTEM = 'You read a request a user gave a coding agent. Answer with JSON only.';

const WantsSchema = z.strictObject({ answer: z.enum(['yes', 'no']) });

export function wantsChangesPrompt(request: string, file: string) {
  return {
    node: 'wants_changes' as const,
    system: WANTS_CHANGES_SYSTEM,
    messages: [
      `Request: ${request}\n\nDoes the user want the agent to edit, move or delete ${file}? Answer yes or no.`,
    ],
  };
}

/**
 * For a request not put as a question whose plan is to change nothing at all (no step's `expect.changes` names a
 * file or a folder), the files of the project the request names that the model says the user wants edited, moved or
 * deleted: a plan that leaves them as they are does not carry the request out. Nothing for any other request or
 * plan, nor where the model says yes of every one of several files (a verdict on the request, not on the files): with
 * the 1.5B model, a request naming a failing test file and the code to fix had yes of both, and the plan asked for
 * again ran the tests beside the fix instead of after it; the task ran past 5 minutes, where it had taken two.
 * `notAsked`: the files `keepAskedChanges` left out.
 */
export async function wantedChanges(
  model: ModelClient,
  request: string,
  plan: Plan,
  projectFiles: readonly string[],
  notAsked: readonly string[] = []
): Promise<{ files: string[]; usage: ModelUsage; modelCalls: number }> {
  if (isQuestion(request) || plan.steps.some(changesSomething)) return { files: [], usage: ZERO_USAGE, modelCalls: 0 };
  // A file `keepAskedChanges` left out of the plan is not asked of again: its verdict stands, and a question's data
  // file planned back in is the write over it that the verdict kept out.
  const named = namedFiles(projectFiles, request).filter((f) => !notAsked.includes(f));
  let usage = ZERO_USAGE;
  const files: string[] = [];
  for (const file of named) {
    const { value, usage: used } = await model.structured(
      wantsChangesPrompt(request, file),
      WantsSchema,
      'Say whether the user wants the file edited, moved or deleted.'
    );
    usage = addUsage(usage, used);
    if (value.answer === 'yes') files.push(file);
  }
  // Yes of every one of several files is a verdict on the request, not on the files (it wants some change): it says
  // nothing of which file the plan missed, and is not taken.
  return { files: named.length > 1 && files.length === named.length ? [] : files, usage, modelCalls: named.length };
}
