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

describe('what is remembered', () => {
  const call = (path: string) => ({
    name: 'workspace__read_file',
    args: { path },
    id: 'c1',
    type: 'tool_call' as const,
  });

  it('a reply with calls comes back with them, a copy each time: a caller changing its arguments changes no other', async () => {
    let sent = 0;
    const remember = replyMemo(true, () => 'task-1');
    const run = async () => {
      sent++;
      return new AIMessage({
        content: '',
        tool_calls: [call('a.py')],
        response_metadata: { finish_reason: 'tool_calls' },
      });
    };
    const first = await remember(['calls'], run);
    (first.tool_calls![0].args as { path: string }).path = 'changed.py';
    const again = await remember(['calls'], run);
    expect(again.tool_calls).toEqual([
      expect.objectContaining({ name: 'workspace__read_file', args: { path: 'a.py' } }),
    ]);
    (again.tool_calls![0].args as { path: string }).path = 'changed too.py';
    expect((await remember(['calls'], run)).tool_calls![0].args).toEqual({ path: 'a.py' });
    expect(sent).toBe(1);
  });

  it('an empty answer, or one a server stopped for its own reasons, is sent again', async () => {
    let sent = 0;
    const remember = replyMemo(true, () => 'task-1');
    const answer = (content: string, finish_reason: string) => async () => {
      sent++;
      return new AIMessage({ content, response_metadata: { finish_reason } });
    };
    await remember(['empty'], answer('  ', 'stop'));
    await remember(['empty'], answer('  ', 'stop'));
    await remember(['filtered'], answer('…', 'content_filter'));
    await remember(['filtered'], answer('…', 'content_filter'));
    expect(sent).toBe(4);
  });

  it('the reply used the longest ago goes first: one used again is kept', async () => {
    let sent = 0;
    const remember = replyMemo(true, () => 'task-1', 2);
    const run = (text: string) => async () => {
      sent++;
      return new AIMessage({ content: text, response_metadata: { finish_reason: 'stop' } });
    };
    await remember(['1'], run('1'));
    await remember(['2'], run('2'));
    await remember(['1'], run('1 again'));
    await remember(['3'], run('3'));
    expect((await remember(['1'], run('1 sent'))).content).toBe('1');
    expect((await remember(['2'], run('2 sent'))).content).toBe('2 sent');
    expect(sent).toBe(4);
  });
});
