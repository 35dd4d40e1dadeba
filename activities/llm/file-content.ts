/**
 * Whole-file writes, for the small profile (./small-model): an `edit_file` or `write_file` the pick aims at a file
 * the prompt shows whole, or at a new file the step names, becomes a `write_file` of the whole new content the
 * `write_file_content` node writes for that same file in plain text (the format weak models write best: the step's
 * instruction, the file as it is now, the other files the step names to read). A model that cannot aim an edit
 * (its `old_string` a line of another file) still writes the right content.
 *
 * Security: the write goes only to the file the pick named, and the permission gate, the workspace server and the
 * user's review see it as they see any other; the rewrite changes only what the model could already write there.
 */
import { withoutRuntimeFrames } from '../../common/command-output';
import { addUsage, ZERO_USAGE, type ModelUsage } from '../../common/model-protocol';
import { plainPath, plannedFiles, plannedFolders } from '../../common/plan';
import { isWithin } from '../../common/posix-path';
import { droppedLines, removedMost } from '../../common/text-diff';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import type { ModelClient, NodePrompt } from './model';
import { withPart } from './file-part';
import { sectionsLine } from './config-sections';
import { contentOfAnswer, fenced } from './fences';
import { withMissingImports } from './python-imports';
import { blankLeft, blankQuestion, copiedIn, madeUpFact, textOnly } from './rewrite-guards';
import { isCut, isWhole, namedFiles, readInFull, type NamedFile, type ReadCall } from './named-files';
import { CHANGES_FILE, PART_WRITES, PLANNED_WRITES, RUN_COMMAND, WRITE_FILE } from './small-model';

export const WRITE_FILE_CONTENT_SYSTEM = `You write one file of a project, for one step of a task. Reply with the file's whole new content in one fenced
code block, and nothing else. Keep every line the step does not ask to change as it is.`;

/**
 * Told only when the file is a program (`isProgram`): with the 1.5B model a script asked to print only a value
 * printed a sentence around it. A line a prompt does not need only moves a small model's answer: told when writing
 * a changelog, the 1.5B model's entry went into a released section.
 */
export const PRINTS_RULE =
  'When the request says what a program prints, it prints exactly that: the bare value, with no words around it.';

/** The source files of the languages a script is written in, by their extensions. */
const PROGRAM = /\.(?:py|js|mjs|cjs|ts|sh|bash|zsh|rb|pl|php|go|rs|java|kt|c|cc|cpp|cs|swift|lua|r)$/i;

/** Whether `path` (as it is now: `current`, null for a new file) is a program: a source file, or one with a `#!`. */
export const isProgram = (path: string, current: string | null): boolean =>
  PROGRAM.test(path) || (current ?? '').startsWith('#!');

/** The same for a long file shown in part (./file-part): only the lines shown are written. */
export const WRITE_FILE_PART_SYSTEM = `You rewrite some lines of one file of a project, for one step of a task. Reply with the new content of just the
lines shown, in one fenced code block, and nothing else. Keep every line the step does not ask to change as it is.`;

/**
 * Told only for a new file, and only where the question can still be asked before the step runs (the first pick,
 * with the plan): a question the file did not need costs the user one answer.
 */
export const ASK_RULE = `If the file must hold a fact about the user that the step does not give (their name, say), reply with only:
QUESTION: <what to ask the user>`;

/** The question an answer asks instead of writing the file, or null. */
export function questionOf(answer: string): string | null {
  const m = /^[\s`~]*(?:[a-z]+\n)?\s*QUESTION:\s*([^\n`]+)/i.exec(answer);
  const q = m?.[1].trim();
  return q ? q.slice(0, 300) : null;
}

type EarlierCall = NonNullable<WholeFileStep['earlierCalls']>[number];

/**
 * The step's last command and what it printed (without the runtime's own stack frames), when no call after it changed
 * a file (a failed edit or a read since leaves its output true): the failing test a fix is for.
 */
export function lastOutput(calls: readonly EarlierCall[]): { command: string; output: string } | undefined {
  for (let i = calls.length - 1; i >= 0; i--) {
    const c = calls[i];
    if (c.tool === RUN_COMMAND) {
      const output = withoutRuntimeFrames(c.text ?? '');
      return typeof c.args.command === 'string' && output ? { command: c.args.command, output } : undefined;
    }
    if (CHANGES_FILE.has(c.tool) && c.status === 'ok') return undefined;
  }
  return undefined;
}

export interface FileContentInput {
  path: string;
  /** The file as it is now, or null for a new file; for a long file, the lines of it the step is about (`part`). */
  current: string | null;
  /** For a long file: which lines `current` holds (./file-part). */
  part?: { from: number; to: number; total: number };
  /** The step's instruction (with the user's answers). */
  instruction: string;
  /** The user's request in their own words, when it says more than the step (a Planner's rewording may lose it). */
  request?: string;
  /**
   * The step is the first plan's only change, in a task that is no follow-up (`PickStep.soleChange`): unless it is
   * tried again, the request is shown in place of the step, whose rewording of it may lose where or how (a section
   * placed after another, a command shown as code).
   */
  soleChange?: boolean;
  /** The other files the step names, to read (the code a new test tests, the data a new script reads). */
  context: readonly NamedFile[];
  /** The model may ask the user for a fact about them instead (`ASK_RULE`). */
  mayAsk?: boolean;
  /** A new file the request names and the step does not: it is to do all the request says, not the step's part. */
  forRequest?: boolean;
  /** In a repair round: what the step's evidence shows is not done yet (a failed check's output, say). */
  notDone?: string;
  /** Why the step's previous attempt failed (a retried or replanned step), when this is not a repair round. */
  previousFailure?: string;
  /** The step's last command before this write, and what it printed (the failing test a fix is for, say). */
  ran?: { command: string; output: string };
  /** The first answer was cut off at the output limit before the file was complete. */
  cutOff?: boolean;
  /** Lines of the file a first answer left out (`DROPPED_SHOWN` of them), to keep this time. */
  dropped?: readonly string[];
  /** A file shown to read that a first answer copied into this one, to leave in its own file this time. */
  copied?: string;
}

/** How much of a command's output a write is shown: its start and, mostly, its end (where a traceback ends). */
export const RAN_CHARS = 1500;

/** `text` cut to `max` characters: a third from its start and the rest from its end. */
export function headAndTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max / 3);
  return `${text.slice(0, head)}\n…\n${text.slice(text.length - (max - head))}`;
}

/** How many of the lines a rewrite dropped its second ask shows. */
export const DROPPED_SHOWN = 12;

export function fileContentPrompt(input: FileContentInput): NodePrompt {
  const parts = [
    ...input.context.map((f) => `File ${f.path} (to read, not to change):\n${fenced(f.text)}`),
    input.current === null
      ? `${input.path} is a new file: write all of it.`
      : input.part
        ? `Lines ${input.part.from}-${input.part.to} of ${input.path} (of ${input.part.total}; the other lines stay ` +
          `as they are):\n${fenced(input.current)}`
        : `File ${input.path}:\n${fenced(input.current)}`,
  ];
  const requestOnly = !!input.soleChange && !!input.request && !input.previousFailure;
  const whole = input.part ? `new content of lines ${input.part.from}-${input.part.to} of` : 'whole new content of';
  return {
    node: 'write_file_content',
    system: input.part
      ? WRITE_FILE_PART_SYSTEM
      : [
          WRITE_FILE_CONTENT_SYSTEM,
          ...(isProgram(input.path, input.current) ? [PRINTS_RULE] : []),
          ...(input.mayAsk ? [ASK_RULE] : []),
        ].join('\n'),
    messages: [
      [
        ...parts,
        ...(input.request && (requestOnly || input.request.trim() !== input.instruction.trim())
          ? [`Request: ${input.request}`, ...sectionsLine(input.path, input.current, input.request)]
          : []),
        ...(requestOnly ? [] : [`Step: ${input.instruction}`]),
        ...(input.ran
          ? [`\`${input.ran.command}\` printed:\n${fenced(headAndTail(input.ran.output, RAN_CHARS))}`]
          : []),
        ...(input.notDone
          ? [`Not done yet: ${input.notDone}`]
          : input.previousFailure
            ? [`The previous attempt failed: ${input.previousFailure}`]
            : []),
        ...(input.forRequest && input.request
          ? [`${input.path} is the file the request asks for: write it to do all that the request says.`]
          : []),
        ...(input.cutOff
          ? [
              'Your first answer was cut off at the output limit before the file was complete: write it again, ' +
                'complete and shorter, each line once.',
            ]
          : []),
        ...(input.dropped?.length
          ? [
              `Your first answer left out these lines of ${input.path}. Keep each one the step does not ask to ` +
                `change:\n${fenced(input.dropped.slice(0, DROPPED_SHOWN).join('\n'))}`,
            ]
          : []),
        ...(input.copied
          ? [`Your first answer copied ${input.copied} into it: use it from its own file (import it, say).`]
          : []),
        `Reply with the ${whole} ${input.path}.`,
      ].join('\n\n'),
    ],
  };
}

export interface WholeFileStep {
  id: string;
  instruction: string;
  files?: NamedFile[];
  newFiles?: string[];
  /** The files the request names, for a write to read (the test a fix is for, the code a new test tests). */
  requestFiles?: NamedFile[];
  earlierCalls?: readonly ReadCall[];
  notDone?: string;
  previousFailure?: string;
  /** The plan's only change (`FileContentInput.soleChange`). */
  soleChange?: boolean;
  /** What its plan expects: once every file of `changes` is written whole, the step is done. */
  expect?: { changes?: string[] };
}

export interface WholeFileWrites {
  calls: PickedCall[];
  usage: ModelUsage;
  /** The `write_file_content` requests made. */
  modelCalls: number;
  /** The files written whole, by step; with the import lines Klea added (./python-imports). */
  rewritten: Array<{ stepId: string; path: string; imports?: string[] }>;
  /** Questions for the user in place of a new file's content (only with `mayAsk`), by step. */
  questions: FileQuestion[];
}

/** A fact only the user knows that a step's new file needs. */
export interface FileQuestion {
  stepId: string;
  path: string;
  question: string;
}

/**
 * The picked calls with each `edit_file` or `write_file` on a file shown whole, or on a new file the step names,
 * made a `write_file` of the file's whole new content as the `write_file_content` node writes it.
 *
 * A call whose rewrite changes nothing stays as the model made it, unless this step has written that file already:
 * then there is nothing left to write and the call is left out (the step's evidence judges it). With `mayAsk`, a
 * new file whose content is a fact about the user the step does not give becomes a question (and the call is left
 * out).
 */
export async function withWholeFileWrites(
  model: ModelClient,
  steps: readonly WholeFileStep[],
  calls: readonly PickedCall[],
  tools: readonly ToolDescriptor[],
  opts: { mayAsk?: boolean; request?: string } = {}
): Promise<WholeFileWrites> {
  const writer = tools.find((t) => t.qualifiedName === WRITE_FILE);
  const res: WholeFileWrites = { calls: [], usage: ZERO_USAGE, modelCalls: 0, rewritten: [], questions: [] };
  if (!writer) return { ...res, calls: [...calls] };
  /** The new content of `path` for `step`, or a question, or null when it would change nothing. */
  const rewrite = async (
    step: WholeFileStep,
    path: string,
    current: NamedFile | null
  ): Promise<{ question?: string; content?: string; imports?: string[] } | null> => {
    const mayAsk = !!opts.mayAsk && current === null;
    // A new file the request names that the step's own words do not: the Planner split the file's work into steps
    // and the file came to this one from the request (plan-files.ts, `requestedNewFiles`). Written for the step
    // alone, a new script whose step said only to read its data file did only that, and printed nothing.
    const forRequest =
      current === null &&
      !!opts.request &&
      namedFiles([path], opts.request).length > 0 &&
      namedFiles([path], step.instruction).length === 0;
    // A file is written with what it builds on: the other files its step names and those the request names (a new
    // test written without seeing the code it tests expected a number from a function that returns a dict; a fix
    // was rewritten three times without the test it was to pass).
    const named = (step.files ?? []).filter((f) => f !== current && isWhole(f));
    const seen = new Set([path, ...named.map((f) => f.path)].map(plainPath));
    const context = [...named, ...(step.requestFiles ?? []).filter((f) => isWhole(f) && !seen.has(plainPath(f.path)))];
    // Outside a repair round (whose evidence holds the check's output), the step's last command: what a fix is for.
    const ran = step.notDone ? undefined : lastOutput(step.earlierCalls ?? []);
    const ask = async ({ dropped, cutOff, copied }: { dropped?: string[]; cutOff?: boolean; copied?: string } = {}) => {
      const answer = await model.text(
        fileContentPrompt({
          path,
          current: current ? current.text : null,
          ...(current?.part
            ? { part: { from: current.part.from, to: current.part.to, total: current.part.total } }
            : {}),
          instruction: step.instruction,
          request: opts.request,
          ...(step.soleChange ? { soleChange: true } : {}),
          context,
          mayAsk,
          ...(forRequest ? { forRequest } : {}),
          notDone: step.notDone,
          previousFailure: step.previousFailure,
          ...(ran ? { ran } : {}),
          ...(dropped ? { dropped } : {}),
          ...(cutOff ? { cutOff } : {}),
          ...(copied ? { copied } : {}),
        }),
        { afterCutOff: cutOff === true }
      );
      res.usage = addUsage(res.usage, answer.usage);
      res.modelCalls++;
      return { text: answer.text, cut: answer.cutShort === true };
    };
    const first = await ask();
    let text = first.text;
    // An answer cut at the output limit is a file cut short (a small model repeated one more test case until the
    // limit, and the cut file was refused as invalid code again and again): it is asked for once more, complete and
    // shorter; cut again, it is not used.
    if (first.cut) {
      const again = await ask({ cutOff: true });
      if (again.cut) return null;
      text = again.text;
    }
    const question = mayAsk ? questionOf(text) : null;
    if (question) return { question };
    let content = contentOfAnswer(text);
    const dropped = (c: string) => (current ? droppedLines(current.text, c) : []);
    const dropsMost = (c: string) => !!current && removedMost(current.text, c) !== null;
    const same = (c: string) => !!current && textOnly(c) === textOnly(current.text);
    // The rewrite of an existing file keeps most of it: a model asked for the whole file that drops half of its
    // lines (a function the step never mentioned) is asked once more, shown what it left out; if it drops them
    // again, it is not used, and the model's own call stays.
    if (content !== null && dropsMost(content)) {
      content = contentOfAnswer((await ask({ dropped: dropped(content) })).text);
      if (content !== null && dropsMost(content)) return null;
    }
    // A blank the request points at that the rewrite leaves as it was: the model lacks the fact (a 0.5B rewrite of a
    // LICENSE kept its `<COPYRIGHT HOLDER>` and its edit put another licence's name in the title); the user is asked.
    const left = opts.mayAsk ? blankLeft(current?.text ?? null, content, opts.request ?? '') : null;
    if (left) return { question: blankQuestion(path, left) };
    if (content === null || same(content)) return null;
    // Nor is one that copies in a file it was shown to read: the model merged two files into one (a 0.5B model's new
    // test file held the function it tests, the same answer each round). Asked once more, told which file it copied,
    // an answer that copies again (or changes nothing, or drops most of the file) is not used.
    const copiedFile = (c: string) => context.find((f) => copiedIn(f.text, c, current?.text ?? ''));
    const copied = copiedFile(content);
    if (copied) {
      content = contentOfAnswer((await ask({ copied: copied.path })).text);
      if (content === null || copiedFile(content) || same(content) || dropsMost(content)) return null;
    }
    // Klea's own name where a fact about the user belongs, or a blank it made up for such a fact where the file's
    // blank was (`[Your Name]` where `<NAME>` was; ./rewrite-guards): the user is asked for the fact where the step
    // can still stop to ask, and otherwise the rewrite is not used.
    const sources = [current?.text ?? '', step.instruction, opts.request ?? '', ...context.map((f) => f.text)];
    const madeUp = madeUpFact(path, current?.text ?? null, content, sources);
    if (madeUp) return opts.mayAsk ? { question: madeUp } : null;
    // A part's new lines go back into the whole file, the rest of it as it was.
    if (current?.part) return { content: withPart(current.part, content) };
    // A function of the project's that the file calls and never imports is imported (./python-imports).
    const imported = path.endsWith('.py') ? withMissingImports(path, content, context) : null;
    if (imported?.added.length) return { content: imported.text, imports: imported.added };
    return { content };
  };
  for (const call of calls) {
    const step = steps.find((s) => s.id === call.stepId);
    const target = typeof call.args.path === 'string' ? plainPath(call.args.path) : null;
    if (!step || !target || !CHANGES_FILE.has(call.qualifiedName)) {
      res.calls.push(call);
      continue;
    }
    const written = new Set(
      (step.earlierCalls ?? [])
        .filter((c) => CHANGES_FILE.has(c.tool) && c.status === 'ok' && typeof c.args.path === 'string')
        .map((c) => plainPath(c.args.path as string))
    );
    // Files shown whole, and long files shown in part (their part is rewritten and put back).
    const shown = (step.files ?? []).filter((f) => !isCut(f));
    const aimed = shown.find((f) => plainPath(f.path) === target) ?? readInFull(step.earlierCalls ?? [], target);
    const isNew = !aimed && (step.newFiles ?? []).map(plainPath).includes(target);
    if (!aimed && !isNew) {
      if (!PLANNED_WRITES.has(call)) res.calls.push(call);
      continue;
    }
    // Only the file the pick named: a write never moves to another file.
    const path = aimed ? aimed.path : target;
    const r = await rewrite(step, path, aimed ?? null);
    if (r?.question !== undefined) {
      res.questions.push({ stepId: step.id, path, question: r.question });
      continue;
    }
    if (r?.content !== undefined) {
      res.rewritten.push({ stepId: step.id, path, ...(r.imports ? { imports: r.imports } : {}) });
      // The whole file is the step's change to it: once every file its plan changes is written, the step is done
      // (its check, if any, runs next), whatever the pick said; another pick would only write the file again.
      const made = new Set([
        ...written,
        ...res.rewritten.filter((w) => w.stepId === step.id).map((w) => plainPath(w.path)),
      ]);
      const planned = plannedFiles(step);
      const folders = plannedFolders(step);
      const done =
        planned.length + folders.length > 0 &&
        planned.every((f) => made.has(f)) &&
        folders.every((d) => [...made].some((f) => f !== d && isWithin(d, f)));
      const { stepDone, ...rest } = call;
      const write: PickedCall = {
        ...rest,
        ...(stepDone === false && !done ? { stepDone } : {}),
        server: writer.server,
        tool: writer.name,
        qualifiedName: WRITE_FILE,
        readOnly: writer.readOnly,
        idempotent: writer.idempotent,
        args: { path, content: r.content },
      };
      // Written from the whole file, though only a part of it was shown: not a blind write.
      if (aimed?.part) PART_WRITES.add(write);
      res.calls.push(write);
    } else if (!written.has(target) && !PLANNED_WRITES.has(call)) res.calls.push(call);
  }
  return res;
}
