/**
 * The pick_tools node's prompt (docs/architecture.md §7): the request, the goal, the project's listing and, for each
 * step, its instruction, the files it names as they are now (a long one as the part the step is about), its calls so
 * far, what it builds on, and what shows it worked.
 */
import { withoutRuntimeFrames } from '../../common/command-output';
import { plainPath, type StepExpect } from '../../common/plan';
import { isWhole, type NamedFile } from './named-files';
import type { EarlierCall, PickToolsInput } from './pick-tools';
import { filesSection, join, resultsText, section } from './prompt-text';
import { untrusted, withUntrustedRule } from './untrusted';

/** The function a pick calls for a step no offered tool can do. */
export const NO_SUITABLE_TOOL = 'no_suitable_tool';

export const PICK_TOOLS_SYSTEM = `You make the tool calls that carry out the steps listed. For each step, call the tool that does its next
part, with exact arguments, and set step_id to the step's id.
- Paths are relative to the project directory: use the real file names from the step or the files listed.
- step_done: false when the step needs more calls once you see this call's result (run the tests after you fix
  the code, say); true when the step is complete after this call.
- Steps already under way show the calls made so far and their results: make the next call, do not repeat one.
- If no offered tool can do a step, call ${NO_SUITABLE_TOOL} for it with the reason.
Call functions only.`;

/** What an earlier call of the step returned, as much as a next pick needs (without the runtime's own stack frames). */
export const EARLIER_CALL_CHARS = 1500;

/** What an earlier call returned, as the pick is shown it (runtime frames out, cut at `EARLIER_CALL_CHARS`). */
function shownResult(c: EarlierCall): string {
  const shown = withoutRuntimeFrames(c.text);
  return shown.length > EARLIER_CALL_CHARS ? `${shown.slice(0, EARLIER_CALL_CHARS)}…` : shown;
}

/** `sayShown`: an earlier write's content that is a file the step shows whole is said by name (`withoutShownContent`). */
function earlierCallsText(calls: readonly EarlierCall[], files: readonly NamedFile[], sayShown: boolean): string {
  return calls
    .map((c, i) => {
      const args = JSON.stringify(sayShown ? withoutShownContent(c.args, files) : c.args);
      return `${i + 1}. ${c.tool} ${args} -> ${c.status}\n${untrusted(`result of ${c.tool}`, shownResult(c))}`;
    })
    .join('\n');
}

/** A string argument at least this long that is a file the prompt shows whole is said by name (`withoutShownContent`). */
const SHOWN_CONTENT_CHARS = 200;

/**
 * An earlier call's arguments with each long string that is the whole text of the file its `path` names, as the
 * step shows it now, said by name instead: a write's content, repeated in a repair round's prompt right below the
 * same file, doubled what the model read there (700 characters of a new test file, with the 1.5B model). Under the
 * small profile only, where a pick's write of a file shown whole is written by the `write_file_content` node
 * (./file-content): a model whose own write content is used as it is might copy the name into the file.
 */
export function withoutShownContent(
  args: Record<string, unknown>,
  files: readonly NamedFile[]
): Record<string, unknown> {
  const file =
    typeof args.path === 'string' ? files.find((f) => plainPath(f.path) === plainPath(args.path as string)) : undefined;
  if (!file || !isWhole(file)) return args;
  const same = (v: unknown) =>
    typeof v === 'string' && v.length >= SHOWN_CONTENT_CHARS && v.replace(/\n$/, '') === file.text.replace(/\n$/, '');
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [k, same(v) ? `[${file.path} as it is now, shown above]` : v])
  );
}

/**
 * What the step still lacks, as the pick is told it: a failed check whose output is the result of the step's last
 * call (the same command, failed; nothing ran after it), shown there whole, points at that result rather than
 * repeating it. An output the call's result shows only in part (longer than `EARLIER_CALL_CHARS`) is repeated as the
 * evidence gives it, by its start and its end: a test run ends with why its last test failed.
 */
export function notDoneText(notDone: string, check: string | undefined, calls: readonly EarlierCall[]): string {
  const head = check ? `the check \`${check}\` failed: ` : null;
  const last = calls.at(-1);
  if (!head || !notDone.startsWith(head) || !last || last.status === 'ok') return notDone;
  if (last.tool !== 'workspace__run_command' || last.args.command !== check) return notDone;
  if (shownResult(last) !== withoutRuntimeFrames(last.text) || CUT_RESULT.test(last.text)) return notDone;
  return `${head}its output is the result of call ${calls.length} above`;
}

/** The mark of a call's result the workflow cut (workflows/task/text.ts, `cut`). */
const CUT_RESULT = /… \[\d+ more characters\]$/;

/** `small`: the small profile's pick (an earlier write's content may be said by name: `withoutShownContent`). */
export function pickToolsPrompt(input: PickToolsInput, opts: { small?: boolean } = {}) {
  const steps = input.steps
    .map((s) =>
      join(
        // The step's own instruction first: it is what the call must carry out.
        `### Step ${s.id}: ${s.instruction}`,
        s.files?.length
          ? `Files it names, as they are now (no need to read them):\n${s.files
              .map((f) => `#### ${f.path}${partNote(f)}\n${untrusted(f.path, f.text)}`)
              .join('\n')}`
          : '',
        s.newFiles?.length ? `New files it names (not in the project yet): ${s.newFiles.join(', ')}` : '',
        s.earlierCalls?.length
          ? `Calls made so far for this step:\n${earlierCallsText(s.earlierCalls, s.files ?? [], opts.small === true)}\nMake the next call this step ` +
              'still needs (write or edit a file, or run a command, say), not one made already; step_done true ' +
              'when it finishes the step.'
          : '',
        s.dependencyResults.length ? `Results it builds on:\n${resultsText(s.dependencyResults)}` : '',
        s.previousFailure ? `The previous attempt failed: ${s.previousFailure}` : '',
        expectText(s.expect),
        s.notDone
          ? `Not done yet: ${notDoneText(s.notDone, s.expect?.check, s.earlierCalls ?? [])}\nMake the call that fixes this; do not repeat a call that failed.`
          : '',
        s.suggested?.length ? `Tools for this step: ${s.suggested.join(', ')}.` : ''
      )
    )
    .join('\n\n');
  return {
    node: 'pick_tools' as const,
    system: withUntrustedRule(PICK_TOOLS_SYSTEM),
    messages: [
      join(
        section("The user's request", input.request),
        sameWords(input.request, input.goal) ? '' : section('Goal', input.goal),
        filesSection(input.listing?.text),
        section('Steps', steps)
      ),
    ],
  };
}

/** The heading's note for a long file shown in part: which lines (./file-part). */
export const partNote = (f: NamedFile) =>
  f.part ? `, lines ${f.part.from}-${f.part.to} of ${f.part.total} (the part the step is about)` : '';

/** What the step's plan says shows it worked, as the pick sees it. */
function expectText(expect: StepExpect | undefined): string {
  if (!expect) return '';
  const parts = [
    expect.changes?.length ? `${expect.changes.join(', ')} changed` : '',
    expect.check ? `\`${expect.check}\` exits 0 (Klea runs it after the step)` : '',
  ].filter(Boolean);
  return parts.length ? `Done when: ${parts.join('; ')}.` : '';
}

/** Whether two texts say the same in the same words (a goal that only restates the request adds nothing). */
const sameWords = (a: string | undefined, b: string) =>
  a !== undefined && a.toLowerCase().replace(/\W+/g, ' ').trim() === b.toLowerCase().replace(/\W+/g, ' ').trim();
