/** Slash commands (pure parsing and the replies that need no model). */
import type { Mode } from '../../common/config';
import { COMMANDS } from '../../common/session';
import { SCIENTIFIC_MODE_EXPLANATION } from '../task/modes';

export type ParsedCommand =
  | { name: 'help' }
  | { name: 'mode'; mode: Mode | null; raw: string }
  | { name: 'compact' }
  | { name: 'init' }
  | { name: 'unknown'; raw: string };

export const isCommand = (text: string) => text.trimStart().startsWith('/');

export function parseCommand(text: string): ParsedCommand {
  const [head, ...rest] = text.trim().split(/\s+/);
  const arg = rest.join(' ').trim().toLowerCase();
  switch (head.toLowerCase()) {
    case '/help':
      return { name: 'help' };
    case '/mode':
      return { name: 'mode', mode: arg === 'general' || arg === 'scientific' ? arg : null, raw: arg };
    case '/compact':
      return { name: 'compact' };
    case '/init':
      return { name: 'init' };
    default:
      return { name: 'unknown', raw: head };
  }
}

export const helpText = () => ['Commands:', ...COMMANDS.map((c) => `- \`${c.usage}\`: ${c.description}`)].join('\n');

export const unknownCommandText = (raw: string) =>
  `Unknown command \`${raw}\`. Known commands: ${COMMANDS.map((c) => `\`${c.name}\``).join(', ')}. Type \`/help\` for details.`;

export const modeUsageText = (mode: Mode) => `Usage: \`/mode general|scientific\` (the mode is ${mode}).`;

export const modeSetText = (mode: Mode) =>
  mode === 'scientific' ? `Mode set to scientific. ${SCIENTIFIC_MODE_EXPLANATION}` : 'Mode set to general.';

export const INIT_READ_ONLY_TEXT =
  '/init writes AGENTS.md into the project, and this session has read-only tool access. Switch tool access to full (in the status pane) and run /init again.';

export const initWrittenText = (path: string, bytes: number) =>
  `Wrote ${path} (${bytes} bytes) with guidance for this project. It is used as project context from now on; edit it as you like.`;
