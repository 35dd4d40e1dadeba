/** A message that names a file, a dot-file or a command is work, in any language, without a model call. */
import { namesWork, routeRequest } from '../../activities/llm/route-request';
import type { ModelClient } from '../../activities/llm/model';

describe('work, whatever the language', () => {
  it.each([
    'Erstelle eine Datei hallo.py, die Hallo Welt ausgibt.',
    'Crée un fichier notes.md avec une liste de courses.',
    '在 config.json 里把端口改成 9090',
    'What does my .env say about the database?',
    'Bitte führe `npm test` aus',
    'src/app.ts: was macht diese Datei?',
    'Lies x.txt',
  ])('%s', (text) => {
    expect(namesWork(text)).toBe(true);
  });

  it('a file of the project named without its extension-like shape still counts (Makefile, LICENSE)', () => {
    expect(namesWork('Was steht im Makefile?', ['Makefile', 'src/app.ts'])).toBe(true);
    expect(namesWork('Was steht im Makefile?', [])).toBe(false);
  });

  it('a greeting, a thank-you or a general question is left to the router', () => {
    for (const text of ['hello', 'Danke!', 'What is a monad?', '你好', 'e.g. this, etc.'])
      expect(namesWork(text, ['README.md'])).toBe(false);
  });

  it('routes such a message to a task without asking the model', async () => {
    const model = {
      structured: () => {
        throw new Error('the model was asked');
      },
    } as unknown as ModelClient;
    await expect(routeRequest(model, { text: 'Lege todo.txt an' })).resolves.toEqual({
      route: 'task',
      reply: null,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 },
    });
  });
});
