/** Conversation memory: what stays verbatim, what is folded into the summary, and when. */
import type { Turn } from '../../common/session';
import { compactSplit, foldDetail, SessionMemory, splitWindow } from '../../workflows/session/memory';

const user = (text: string): Turn => ({ role: 'user', text });
const assistant = (text: string): Turn => ({ role: 'assistant', text });
const settings = { numHistoryChars: 10, summarisationThresholdChars: 7 };

describe('session memory', () => {
  it('the most recent turns up to the window stay verbatim; older ones are foldable', () => {
    const turns = [user('aaaa'), assistant('bbbb'), user('cccc'), assistant('dddd')];

    const { older, recent } = splitWindow(turns, 8);

    expect(older).toEqual([user('aaaa'), assistant('bbbb')]);
    expect(recent).toEqual([user('cccc'), assistant('dddd')]);
  });

  it('the last request and what follows it are never folded, however long', () => {
    const turns = [user('aa'), user('x'.repeat(50)), assistant('y'.repeat(50))];

    const { older, recent } = splitWindow(turns, 10);

    expect(older).toEqual([user('aa')]);
    expect(recent).toHaveLength(2);
  });

  it('nothing is folded until the older part passes the threshold', () => {
    const memory = new SessionMemory(settings);
    memory.add(user('aaaa'), assistant('bbbb'));
    const early = memory.due();

    memory.add(user('cccccccccc'), assistant('d'));

    expect(early).toBeNull();
    expect(memory.due()?.older).toEqual([user('aaaa'), assistant('bbbb')]);
  });

  it('folding replaces the older turns by the summary and keeps turns that arrived meanwhile', () => {
    const memory = new SessionMemory(settings, {
      summary: 'before',
      turns: [user('a'), assistant('b')],
      summarisedChars: 3,
    });
    const { older, recent } = compactSplit([...memory.turns, user('c')]);
    memory.add(user('c'));
    memory.add(assistant('arrived while folding'));

    memory.fold(older, recent, { summary: 'a and b', foldedChars: 2 });

    expect(memory.summary).toBe('a and b');
    expect(memory.turns).toEqual([user('c'), assistant('arrived while folding')]);
    expect(memory.summarisedChars).toBe(5);
  });

  it('/compact folds everything before the last request, and nothing when there is only that request', () => {
    const memory = new SessionMemory(settings);
    memory.add(user('first'), assistant('reply'), user('second'));
    const only = new SessionMemory(settings);
    only.add(user('first'));

    expect(memory.compaction()).toEqual({ older: [user('first'), assistant('reply')], recent: [user('second')] });
    expect(only.compaction().older).toEqual([]);
  });

  it('node prompts see only the recent window', () => {
    const memory = new SessionMemory(settings);
    memory.add(user('aaaaaaaa'), assistant('bbbb'), user('cc'));

    expect(memory.recent()).toEqual([assistant('bbbb'), user('cc')]);
  });

  it('the inspect pane is told how much was folded and how much stays verbatim', () => {
    expect(foldDetail('compact', 2, 40, 12)).toBe(
      '/compact: folded 2 turns (40 characters) into the summary; 12 characters stay verbatim'
    );
    expect(foldDetail('threshold', 1, 5, 0)).toMatch(/^memory threshold reached: /);
  });
});
