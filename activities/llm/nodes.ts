/**
 * The task path's model nodes (docs/architecture.md §7): write_plan, pick_tools, do_step, evaluate_step and
 * compose_answer. Each builds its prompt from only what it needs; project context goes to the Planner and the
 * answer composer only, never to the per-round nodes.
 */
import type { ToolAccess } from '../../common/config';
import { addUsage, ZERO_USAGE, type MeteredUsage, type ModelUsage } from '../../common/model-protocol';
import { EvaluateStepOutputSchema, type PlanStep } from '../../common/plan';
import type { SummarizeInput } from '../../common/session';
import type { StepResultView } from '../../common/task';
import type { ModelClient, NodePrompt } from './model';
import { isWhole, type NamedFile } from './named-files';
import { definedSection, join, resultsText, section } from './prompt-text';
import { definitions, definitionsNote } from '../project/definitions';
import { turnsText, untrusted, withoutFences, withUntrustedRule } from './untrusted';

export { writePlan, writePlanPrompt, WRITE_PLAN_SYSTEM, type WritePlanInput } from './planner';
export * from './pick-tools';

// ---------------------------------------------------------------- do_step

export interface DoStepInput {
  goal: string;
  step: Pick<PlanStep, 'id' | 'title' | 'instruction'>;
  dependencyResults: StepResultView[];
}

export const DO_STEP_SYSTEM = `You carry out one step of a plan that needs no tool: think over the results of earlier steps and write
the step's result. Be concrete and complete; write only the result.`;

export async function doStep(model: ModelClient, input: DoStepInput): Promise<{ text: string; usage: ModelUsage }> {
  const result = await model.text({
    node: 'do_step',
    system: withUntrustedRule(DO_STEP_SYSTEM),
    messages: [
      join(
        section('Goal', input.goal),
        section(`Step ${input.step.id}: ${input.step.title}`, input.step.instruction),
        section('Results of earlier steps', resultsText(input.dependencyResults))
      ),
    ],
  });
  return { ...result, text: withoutFences(result.text) };
}

// ---------------------------------------------------------------- evaluate_step

export interface EvaluateStepInput {
  goal: string;
  step: Pick<PlanStep, 'id' | 'title' | 'instruction'>;
  calls: Array<{ tool: string; status: string; text: string }>;
  attempt: number;
}

export const EVALUATE_STEP_SYSTEM = `You judge the outcome of one step whose tool reported an error. Call evaluate_step with:
- move_on when the result is good enough (or the error is the answer, e.g. "no matches"),
- retry when running the same step again is likely to work,
- replan when the plan itself must change.`;

export async function evaluateStep(model: ModelClient, input: EvaluateStepInput) {
  const calls = input.calls.map((c) => `- ${c.tool} (${c.status}):\n${untrusted(`tool ${c.tool}`, c.text)}`).join('\n');
  const { value, usage } = await model.structured(
    {
      node: 'evaluate_step',
      system: withUntrustedRule(EVALUATE_STEP_SYSTEM),
      messages: [
        join(
          section('Goal', input.goal),
          section(`Step ${input.step.id}: ${input.step.title} (attempt ${input.attempt})`, input.step.instruction),
          section('Tool calls and results', calls)
        ),
      ],
    },
    EvaluateStepOutputSchema,
    'Decide whether to move on, retry the step, or replan.'
  );
  return { ...value, usage };
}

// ---------------------------------------------------------------- compose_answer

export interface ComposeAnswerInput {
  projectDir: string;
  request: string;
  goal: string;
  results: StepResultView[];
  /** The task's tool access: a read-only task's answer says that a change asked for was not made. */
  toolAccess?: ToolAccess;
  /** The project files the request names, as they are after the work (filled in by the activity). */
  files?: NamedFile[];
  /** Where the names of code the request mentions are defined (../project/definitions; filled in by the activity). */
  defined?: string[];
}

/** What the composer is told of read-only access. */
export const READ_ONLY_NOTE =
  'This task had read-only access: no file could be changed and no command run. If the request asks for a ' +
  'change, say first that it was not made because access is read-only.';

export const COMPOSE_ANSWER_SYSTEM = `You write Klea's answer to the user from the results of the plan's steps. Answer the request directly
and briefly, in markdown, using the real values in the results (command output, file contents, counts).
- Claim only what a result shows. A step marked NOT ACHIEVED was not done: say so, with its reason.
- Mention a denied path, an error or a failed command only when a result shows one.`;

export function composeAnswerPrompt(input: ComposeAnswerInput, projectContext: string, again = false): NodePrompt {
  return {
    node: 'compose_answer',
    system: withUntrustedRule(COMPOSE_ANSWER_SYSTEM),
    messages: [
      join(
        section('Project context (from the project instruction file)', projectContext),
        section('Step results', resultsText(input.results)),
        input.files?.length
          ? section(
              'Files the request names, as they are now',
              input.files.map((f) => `#### ${f.path}${linesNote(f)}\n${untrusted(f.path, f.text)}`).join('\n')
            )
          : '',
        definedSection(input.defined),
        input.toolAccess === 'read_only' ? section('Access', READ_ONLY_NOTE) : '',
        // Last, so the answer follows the request rather than the results: after a list of results a small model
        // went on with the list ("- s2 … (done)") as its answer.
        section('Request', input.request),
        again ? ANSWER_AGAIN : ANSWER_NOW
      ),
    ],
  };
}

/** The compose prompt's last line. */
export const ANSWER_NOW = "Write Klea's answer to this request, from the results above.";

/**
 * How many lines a file shown whole has and what its code defines, for the heading it is shown under (counts a model
 * cannot make).
 */
export function linesNote(file: NamedFile): string {
  if (!isWhole(file)) return '';
  const lines = file.text ? file.text.replace(/\n$/, '').split('\n').length : 0;
  const defines = definitionsNote(definitions(file.path, file.text));
  return ` (${lines} ${lines === 1 ? 'line' : 'lines'}${defines ? `; ${defines}` : ''})`;
}

/** The last line of the compose prompt asked again, after an answer that only repeated what it was shown. */
export const ANSWER_AGAIN =
  "Your first answer only repeated text shown above. Write Klea's answer to this request in your own words: " +
  'what the results say of what it asks.';

export async function composeAnswer(
  model: ModelClient,
  input: ComposeAnswerInput,
  projectContext: string
): Promise<{ text: string; usage: MeteredUsage }> {
  const prompt = composeAnswerPrompt(input, projectContext);
  const answer = await model.text(prompt);
  const text = withoutLoops(withoutFences(answer.text));
  // Under the small profile, an answer that only repeats what it was shown is asked for once more (docs/models.md).
  if (model.profile === 'small' && onlyRepeats(text, String(prompt.messages[0]), input.request)) {
    const again = await model.text(composeAnswerPrompt(input, projectContext, true));
    const second = withoutLoops(withoutFences(again.text));
    const usage = { ...addUsage(answer.usage, again.usage), modelCalls: 2 };
    const better = second && !onlyRepeats(second, String(prompt.messages[0]), input.request);
    return { usage, text: (better ? second : text) || resultsAnswer(input.results) };
  }
  return { usage: answer.usage, text: text || resultsAnswer(input.results) };
}

/**
 * Whether an answer only repeats text its prompt showed: the request itself, or two lines or more of what the prompt
 * holds (a file or a result copied out). A small model answered a question about what a function returns with the
 * function's source, and another question with the question itself.
 */
export function onlyRepeats(answer: string, shown: string, request: string): boolean {
  const flat = (t: string) =>
    t
      .replace(/```[\w-]*/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
  const said = flat(answer);
  if (!said) return false;
  const asked = flat(request);
  if (asked && said.includes(asked)) return true;
  return (
    answer
      .trim()
      .split('\n')
      .filter((l) => l.trim() && !/^\s*```/.test(l)).length >= 2 && flat(shown).includes(said)
  );
}

/** Times one line may follow itself before it is taken for a loop. */
const LOOP_RUN = 3;

/**
 * A small model at temperature 0 can write one line again and again up to its token limit ("```markdown" 150
 * times): such a run keeps one line, and a code fence left open with nothing after it goes too.
 */
export function withoutLoops(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length;) {
    let j = i + 1;
    while (j < lines.length && lines[j] === lines[i]) j++;
    const run = j - i;
    out.push(...(lines[i].trim() && run >= LOOP_RUN ? [lines[i]] : lines.slice(i, j)));
    i = j;
  }
  while (out.length && !out[out.length - 1].trim()) out.pop();
  const fences = out.filter((l) => /^\s*```/.test(l)).length;
  if (fences % 2 === 1 && /^\s*```[\w-]*\s*$/.test(out.at(-1) ?? '')) out.pop();
  return out.join('\n').trim();
}

/** An answer from the steps' results alone, for a composer that wrote nothing usable. */
function resultsAnswer(results: readonly StepResultView[]): string {
  const line = (r: StepResultView) => {
    const first = (r.result ?? '').trim().split('\n')[0] ?? '';
    return `- ${r.title}: ${first.length > 200 ? `${first.slice(0, 199)}…` : first || r.status}`;
  };
  const achieved = results.filter((r) => !r.notAchieved);
  return achieved.length
    ? `What the steps did:\n${achieved.map(line).join('\n')}`
    : 'No step achieved its instruction.';
}

export { ZERO_USAGE };

// ---------------------------------------------------------------- summarize_memory

export const SUMMARIZE_MEMORY_SYSTEM = `You keep the running summary of a conversation between a user and Klea, a research and coding agent.
Fold the older turns below into the summary: keep facts, decisions, names, file paths, preferences and open
questions; drop pleasantries. Write only the new summary (it replaces the old one), as compact prose or bullets.`;

export async function summarizeMemory(model: ModelClient, input: SummarizeInput) {
  return model.text({
    node: 'summarize_memory',
    system: withUntrustedRule(SUMMARIZE_MEMORY_SYSTEM),
    messages: [
      join(
        section('Current summary', input.summary ? untrusted('the running summary', input.summary) : '(none yet)'),
        section('Older turns to fold in', turnsText(input.turns))
      ),
    ],
  });
}

// ---------------------------------------------------------------- init_project

export const INIT_PROJECT_SYSTEM = `You write AGENTS.md for a software or research project: the guidance an agent (or a new colleague)
needs to work in it. From the files shown, state what the project is, its layout, how to build, test, lint and
run it (exact commands), its conventions, and anything to be careful with. Only state what the files support;
say "unknown" rather than guess. Write only the markdown content of AGENTS.md.`;

export async function initProjectText(model: ModelClient, observations: string) {
  return model.text({
    node: 'init_project',
    system: withUntrustedRule(INIT_PROJECT_SYSTEM),
    messages: [untrusted('the project files', observations)],
  });
}
