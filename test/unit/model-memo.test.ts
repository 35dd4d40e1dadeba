/**
 * A task's model requests remembered at temperature 0 (activities/llm/model-memo): the same request again in the
 * same task is answered from memory, with no usage; anything else is sent.
 */
import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { messagesKey, replyMemo } from '../../activities/llm/model-memo';
import { usageOf } from '../../activities/llm/model-reply';

const reply = (text: string) =>
  new AIMessage({
    content: text,
    usage_metadata: { input_tokens: 100, output_tokens: 7, total_tokens: 107 },
    response_metadata: { finish_reason: 'length' },
  });

describe('replyMemo', () => {
  let task: string | undefined;
  let sent: number;
  const run = (text: string) => async () => {
    sent++;
    return reply(text);
  };
  beforeEach(() => {
    task = 'task-1';
    sent = 0;
  });
  const prompt = messagesKey([new SystemMessage('# klea:write_file_content\nWrite.'), new HumanMessage('a.py')]);

  it('the same request again in the same task is not sent: the reply comes back without usage', async () => {
    const remember = replyMemo(true, () => task);
    const first = await remember(['text', prompt], run('x = 1'));
    const again = await remember(['text', prompt], run('x = 2'));
    expect(sent).toBe(1);
    expect(usageOf(first).inputTokens).toBe(100);
    expect(again.content).toBe('x = 1');
    expect(usageOf(again)).toEqual({ inputTokens: 0, outputTokens: 0 });
    // How the answer ended stays: a cut answer is still known as cut.
    expect(again.response_metadata.finish_reason).toBe('length');
  });

  it('controls: another task, another message, another form of the request, or a memo turned off all send', async () => {
    const remember = replyMemo(true, () => task);
    await remember(['text', prompt], run('a'));
    task = 'task-2';
    expect((await remember(['text', prompt], run('b'))).content).toBe('b');
    const other = messagesKey([new SystemMessage('# klea:write_file_content\nWrite.'), new HumanMessage('b.py')]);
    expect((await remember(['text', other], run('c'))).content).toBe('c');
    expect((await remember(['json', prompt], run('d'))).content).toBe('d');
    const off = replyMemo(false, () => task);
    await off(['text', prompt], run('e'));
    expect((await off(['text', prompt], run('f'))).content).toBe('f');
    // Outside a task (no activity), nothing is remembered.
    const none = replyMemo(true, () => undefined);
    await none(['text', prompt], run('g'));
    expect((await none(['text', prompt], run('h'))).content).toBe('h');
    expect(sent).toBe(8);
  });

  it('a failed request is not remembered: it is sent again', async () => {
    const remember = replyMemo(true, () => task);
    await expect(
      remember(['text', prompt], async () => {
        sent++;
        throw new Error('connection refused');
      })
    ).rejects.toThrow('connection refused');
    expect((await remember(['text', prompt], run('ok'))).content).toBe('ok');
    expect(sent).toBe(2);
  });

  it('keeps at most its bound of replies, the oldest going first', async () => {
    const remember = replyMemo(true, () => task, 2);
    for (const n of ['1', '2', '3']) await remember([n], run(n));
    await remember(['3'], run('again'));
    await remember(['2'], run('again'));
    expect(sent).toBe(3);
    expect((await remember(['1'], run('sent again'))).content).toBe('sent again');
  });
});
