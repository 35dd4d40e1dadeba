/**
 * The small profile's programs (docs/models.md): a step that works something out of a data file of the project (a
 * count, a sum, a filter, the largest) and changes nothing is carried out by a short Python program the
 * `write_program` node writes, run as a `run_command` like any other (through the permission gate, in the sandbox;
 * the program goes in on standard input, so nothing is written for it). Its output is the step's result. A small
 * model that reads records and filters or adds them up in its head gets it wrong: it keeps a record the condition
 * leaves out, or drops one, and answers a count one off.
 *
 * Which steps: one that expects nothing (no `expect.changes`, no check) and works on data files only, by the files'
 * kind (their extension, below): those the steps it builds on name, when it names no file itself, or, for a request
 * put as a question, those it names. Not the words of any request.
 */
import { addUsage, ZERO_USAGE, type ModelUsage } from '../../common/model-protocol';
import { changesSomething, plainPath, type StepExpect } from '../../common/plan';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { contentOfAnswer } from './fences';
import type { ModelClient, NodePrompt } from './model';
import { isCut, type NamedFile } from './named-files';

/** Kinds of file a program reads better than a small model does: tables, records and lines of data. */
const DATA_FILE = /\.(?:csv|tsv|json|jsonl|ndjson|ya?ml|xml|txt|log|dat)$/i;
export const isDataFile = (path: string) => DATA_FILE.test(plainPath(path));

/**
 * A value asked per key adds up the records that share the key. With the 1.5B model, a program for the group with the
 * most of a product of two columns kept each key's last row (`total[key] = value`): a group of two rows lost one.
 * Said only of a value asked per key: a program for the largest single row is no total. Replayed on recorded
 * programs (docs/models.md).
 */
export const GROUPS_RULE =
  'Where a value is asked per key, rows that share a key are added up: total[key] += value, never total[key] = value.';

export const WRITE_PROGRAM_SYSTEM =
  `You write a short Python 3 program that carries out one step of a task on the project's files and
prints its result. It runs in the project's folder with the standard library only, reads the files by the paths
given, creates and changes no file, and prints just the result, with the values it found. ` +
  `${GROUPS_RULE} Reply with the program in
one fenced code block, and nothing else.`;

export interface ProgramInput {
  /** The user's request, in their own words. */
  request: string;
  /** The step's instruction (with the user's answers). */
  instruction: string;
  /** The data files it works on, as they are now (cut when long: the program reads them whole). */
  files: readonly NamedFile[];
  /** The last run of a program for the step, when it failed: its output. */
  failed?: string;
}

export function programPrompt(input: ProgramInput): NodePrompt {
  const shown = input.files.map((f) =>
    isCut(f)
      ? `File ${f.path} (its start; the program reads all of it):\n${fence(f.text.slice(0, f.text.lastIndexOf('\n…')))}`
      : `File ${f.path}:\n${fence(f.text)}`
  );
  return {
    node: 'write_program',
    system: WRITE_PROGRAM_SYSTEM,
    messages: [
      [
        ...shown,
        `Request: ${input.request}`,
        `Step: ${input.instruction}`,
        ...(input.failed ? [`The last program failed:\n${input.failed}\nWrite one that works.`] : []),
        'Reply with the program.',
      ].join('\n\n'),
    ],
  };
}

const fence = (text: string) => `\`\`\`\n${text.replace(/\n$/, '')}\n\`\`\``;

/**
 * The shell command that runs `program` with Python 3 from standard input (a here-document whose end mark the
 * program does not hold), so no file is written for it.
 */
export function programCommand(program: string): string {
  let mark = 'KLEA_PROGRAM';
  for (let n = 1; program.split('\n').some((l) => l.trim() === mark); n++) mark = `KLEA_PROGRAM_${n}`;
  return `python3 - <<'${mark}'\n${program.replace(/\n$/, '')}\n${mark}`;
}

/** What `computingSteps` looks at of a step. */
export interface ComputingStep {
  id: string;
  expect?: StepExpect;
  /** Files it names, as shown to the pick. */
  files?: readonly NamedFile[];
  newFiles?: readonly string[];
  /** The data files the steps it builds on name, when it names no file itself. */
  sources?: readonly NamedFile[];
  /** The files the request names that the step does not. */
  requestFiles?: readonly NamedFile[];
  /** The results of the steps it depends on. */
  dependencyResults?: readonly unknown[];
  earlierCalls?: ReadonlyArray<{ tool: string; args: Record<string, unknown>; status: string }>;
}

/**
 * The steps of a pick to carry out by a program, each with the data files it works on: a step that expects nothing
 * and works on data files only, that has made no call yet or whose last call was a program that failed. Either it
 * names no file and the steps it builds on name data files (it works over what they read), or it names data files
 * itself and the request is put as a question (`question`), or it names no file and builds on no step, for a
 * question that names data files only (it works over those: a 1.5B Planner gave the steps of a count over a YAML
 * file no dependencies, and the step "count the services in the parsed data" listed a folder of that name). A step
 * that names a data file for a request that is not a question may be a change the Planner gave no `expect` (a
 * setting to change in a YAML file, say): it is picked as usual, for its edit.
 */
export function computingSteps<S extends ComputingStep>(
  steps: readonly S[],
  question: boolean
): Array<{ step: S; files: NamedFile[] }> {
  const out: Array<{ step: S; files: NamedFile[] }> = [];
  for (const s of steps) {
    if (changesSomething(s) || s.expect?.check?.trim() || s.newFiles?.length) continue;
    const own = s.files ?? [];
    if (own.length && !question) continue;
    // Failing those, a question's step that builds on no step works on the files the request names, all data.
    const asked = question && !s.dependencyResults?.length ? (s.requestFiles ?? []) : [];
    const given = own.length ? own : s.sources?.length ? s.sources : asked;
    const files = given.filter((f) => isDataFile(f.path) && !f.part);
    if (!files.length || (given !== s.sources && files.length < given.length)) continue;
    const last = s.earlierCalls?.at(-1);
    if (last && !(isProgramRun(last) && last.status !== 'ok')) continue;
    out.push({ step: s, files: [...files] });
  }
  return out;
}

/** Whether an earlier call ran a program of `programCommand`. */
const isProgramRun = (c: { tool: string; args: Record<string, unknown> }) =>
  c.tool === 'workspace__run_command' &&
  typeof c.args.command === 'string' &&
  c.args.command.startsWith("python3 - <<'KLEA_PROGRAM");

/**
 * For each computing step, a `run_command` of the program the model writes for it (none when the answer holds no
 * program, or `run_command` is not offered: the step is then picked as usual).
 */
export async function programCalls(
  model: ModelClient,
  request: string,
  computing: ReadonlyArray<{ step: ComputingStep & { instruction: string; notDone?: string }; files: NamedFile[] }>,
  tools: readonly ToolDescriptor[]
): Promise<{ calls: PickedCall[]; usage: ModelUsage; modelCalls: number }> {
  const runner = tools.find((t) => t.qualifiedName === 'workspace__run_command');
  const calls: PickedCall[] = [];
  let usage = ZERO_USAGE;
  let modelCalls = 0;
  if (!runner) return { calls, usage, modelCalls };
  for (const { step, files } of computing) {
    const answer = await model.text(
      programPrompt({
        request,
        instruction: step.instruction,
        files,
        ...(step.notDone ? { failed: step.notDone } : {}),
      })
    );
    usage = addUsage(usage, answer.usage);
    modelCalls++;
    const program = contentOfAnswer(answer.text);
    if (!program) continue;
    const { server, name, qualifiedName, readOnly, idempotent } = runner;
    calls.push({
      stepId: step.id,
      server,
      tool: name,
      qualifiedName,
      args: { command: programCommand(program) },
      readOnly,
      idempotent,
    });
  }
  return { calls, usage, modelCalls };
}
