/**
 * What the prompts see of the project, as data: its listing (./project/listing.ts), the files a step or a request
 * names as they are now, and the files a step is to create. Every read goes through the workspace server with
 * read-only access (confined like any read; a sensitive path is refused); one that cannot be had leaves the prompt
 * without it.
 */
import { plainPath, plannedFiles } from '../common/plan';
import { codeNames, filePart, partText } from './llm/file-part';
import { isDataFile } from './llm/program';
import { namedInOutput } from './llm/repair-writes';
import {
  boundNamedFiles,
  isWhole,
  NAMED_FILE_CHARS,
  NAMED_FILES_MAX,
  namedFiles,
  newFileNames,
  type NamedFile,
} from './llm/named-files';
import type { PickStep } from './llm/pick-tools';
import type { createToolActivities } from './mcp/tools';
import { definitions, DEFINITION_FILES_MAX, SOURCE_FILE, type Definition } from './project/definitions';
import {
  deepestListing,
  LISTING_MAX_DEPTH,
  LISTING_MIN_DEPTH,
  mayListDeeper,
  projectListing,
  type ProjectListing,
} from './project/listing';

type ToolActivities = ReturnType<typeof createToolActivities>;

export interface PromptContext {
  /** The project's listing, as deep as it fits (./project/listing.ts), or undefined when it cannot be read. */
  listing(projectDir: string): Promise<ProjectListing | undefined>;
  /** Files as they are now, within `chars` in all (a file that cannot be read is left out). */
  fileTexts(projectDir: string, names: readonly string[], chars?: number): Promise<NamedFile[]>;
  /**
   * The files a step works on, as they are now: those its plan's `expect.changes` and its instruction name, and
   * those its calls so far read or changed (an edit is aimed at text it sees), and in a repair round those the task
   * changed that the failure names. With `partsFor` (the small profile), a
   * file too long to show whole is shown as the part of it around a name of code that text gives (./llm/file-part).
   */
  stepFiles(
    projectDir: string,
    listing: ProjectListing | undefined,
    step: PickStep,
    partsFor?: string
  ): Promise<NamedFile[]>;
  /**
   * What the project's code files of the listing define (./project/definitions), the first `DEFINITION_FILES_MAX`
   * of them; a file that cannot be read is left out.
   */
  definitions(projectDir: string, listing: ProjectListing | undefined): Promise<Map<string, Definition[]>>;
}

export function createPromptContext(tools: Pick<ToolActivities, 'callTool'>): PromptContext {
  async function read(projectDir: string, tool: string, args: Record<string, unknown>) {
    try {
      const r = await tools.callTool({ projectDir, toolAccess: 'read_only', server: 'workspace', tool, args });
      return r.status === 'ok' ? r.text : undefined;
    } catch {
      return undefined;
    }
  }

  async function fileTexts(projectDir: string, names: readonly string[], chars?: number, partsFor?: string) {
    const codeNamed = partsFor ? codeNames(partsFor) : [];
    const texts = await Promise.all(
      names.slice(0, NAMED_FILES_MAX).map(async (file): Promise<NamedFile | null> => {
        const text = await read(projectDir, 'read_file', { path: file });
        if (text === undefined) return null;
        // A data file is not code: shown by its start, for a program to read whole (./llm/program).
        const part =
          text.length > NAMED_FILE_CHARS && codeNamed.length && !isDataFile(file)
            ? filePart(text, codeNamed, NAMED_FILE_CHARS)
            : null;
        return part ? { path: file, text: partText(part), part } : { path: file, text };
      })
    );
    return boundNamedFiles(
      texts.filter((f): f is NamedFile => f !== null),
      chars
    );
  }

  return {
    async listing(projectDir) {
      const text = await read(projectDir, 'list_dir', { path: '.', depth: LISTING_MIN_DEPTH });
      if (text === undefined) return undefined;
      if (!mayListDeeper(text)) return projectListing(text);
      // Two levels that fit, with folders left unopened: the levels below, as many as fit (a walk list_dir stopped
      // short leaves the two levels).
      const deep = await read(projectDir, 'list_dir', { path: '.', depth: LISTING_MAX_DEPTH });
      return (deep !== undefined && deepestListing(deep, LISTING_MAX_DEPTH)) || projectListing(text);
    },
    fileTexts,
    async definitions(projectDir, listing) {
      const files = (listing?.files ?? []).filter((f) => SOURCE_FILE.test(f)).slice(0, DEFINITION_FILES_MAX);
      const texts = await Promise.all(files.map((f) => read(projectDir, 'read_file', { path: f })));
      return new Map(
        files.flatMap((f, i) => (texts[i] === undefined ? [] : [[f, definitions(f, texts[i]!)] as const]))
      );
    },
    stepFiles(projectDir, listing, step, partsFor) {
      const touched = (step.earlierCalls ?? [])
        .map((c) => c.args.path)
        .filter((p): p is string => typeof p === 'string');
      const listed = new Set(listing?.files);
      const names = new Set([
        ...plannedFiles(step).filter((p) => listed.has(p)),
        ...namedFiles(listing?.files ?? [], step.instruction),
        ...touched.filter((p) => listed.has(p)),
        // In a repair round, the files the task changed that the failure names (the new test that failed).
        ...(step.notDone
          ? (step.taskChanged ?? []).filter((p) => listed.has(p) && namedInOutput(p, step.notDone!))
          : []),
      ]);
      return fileTexts(projectDir, [...names], undefined, partsFor && `${step.instruction}\n${partsFor}`);
    },
  };
}

/**
 * The files a step is to create: those its plan's `expect.changes` and its instruction name that are not among the
 * project's `files`, nor among the files its calls so far changed (a file it deleted or moved away is gone, not one
 * to make). Only meaningful with a complete listing.
 */
export function stepNewFiles(files: readonly string[], step: PickStep): string[] {
  const known = new Set([...files, ...(step.earlierCalls ?? []).flatMap((c) => c.changed ?? []).map(plainPath)]);
  const named = [...plannedFiles(step), ...newFileNames(files, step.instruction)];
  return [...new Set(named.filter((p) => !known.has(plainPath(p))))];
}

/**
 * The files of the project (`files`) a step's instruction names that `shown` does not hold whole: cut, or not read
 * for the prompt at all (a file behind the permission gate).
 */
export function stepUnshownFiles(files: readonly string[], step: PickStep, shown: readonly NamedFile[]): string[] {
  const whole = new Set(shown.filter(isWhole).map((f) => f.path));
  return namedFiles(files, step.instruction).filter((f) => !whole.has(f));
}
