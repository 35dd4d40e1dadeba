/** The pieces every node's prompt is built of: titled sections, step results fenced as untrusted, the listing. */
import type { StepResultView } from '../../common/task';
import { untrusted } from './untrusted';

export const section = (title: string, body: string | undefined | null) =>
  body && body.trim() ? `## ${title}\n${body.trim()}` : '';

export const join = (...parts: string[]) => parts.filter(Boolean).join('\n\n');

/** Step results are what tools returned (or what the model made of it): fenced as untrusted, per step. */
export const resultsText = (results: readonly StepResultView[]) =>
  results
    .map((r) =>
      join(
        `- ${r.id} "${r.title}" (${r.notAchieved ? 'NOT ACHIEVED' : r.status})`,
        r.instruction ? `Instruction: ${r.instruction}` : '',
        r.notAchieved ? `Why not: ${r.notAchieved}` : '',
        r.result === null || r.result === '' ? '(no result)' : untrusted(`result of step ${r.id}`, r.result)
      )
    )
    .join('\n');

/** The project's files as the Planner and the picker see them (a short listing), when known. */
export const filesSection = (files: string | undefined) =>
  section('Files in the project', files && untrusted('the project listing', files));

/** Where the names of code the request mentions are defined (activities/project/definitions `whereDefined`). */
export const definedSection = (lines: readonly string[] | undefined) =>
  section(
    'Where the names the request mentions are defined',
    lines?.length ? untrusted("the project's code", lines.join('\n')) : ''
  );
