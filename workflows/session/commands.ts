/** Slash commands (pure parsing and the replies that need no model). */
import { COMMANDS } from '../../common/session';

export type ParsedCommand =
  | { name: 'help' }
  | { name: 'mode'; mode: 'general' | 'scientific' | null; raw: string }
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
