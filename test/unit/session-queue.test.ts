/** The session's queue: messages are taken in order, each once routed; numbering survives continue-as-new. */
import type { QueuedMessage } from '../../common/session';
import { MessageQueue } from '../../workflows/session/queue';

const message = (seq: number, route?: QueuedMessage['route']): QueuedMessage => ({
  seq,
  kind: 'message',
  text: `message ${seq}`,
  ...(route ? { route } : {}),
});

describe('message queue', () => {
  it('a message is taken only once it has been routed, and in the order messages arrived', () => {
    const queue = new MessageQueue('s');
    const first = message(queue.nextSeq());
    const second = message(queue.nextSeq(), 'chat');
    queue.push(first);
    queue.push(second);

    const whileRouting = queue.ready();
    first.route = 'task';

    expect(whileRouting).toBeUndefined();
    expect(queue.routing()).toBe(false);
    expect(queue.ready()).toBe(first);
    queue.shift();
    expect(queue.ready()).toBe(second);
  });

  it('a message that could not be routed leaves the queue', () => {
    const queue = new MessageQueue('s');
    const failed = message(1);
    queue.push(failed);
    queue.push(message(2, 'chat'));

    queue.remove(failed);

    expect(queue.includes(failed)).toBe(false);
    expect(queue.view().map((m) => m.seq)).toEqual([2]);
  });

  it('task ids and message numbers go on where the previous run stopped', () => {
    const before = new MessageQueue('s');
    before.nextTaskId();
    before.nextSeq();
    before.push(message(before.nextSeq(), 'chat'));

    const after = new MessageQueue('s', before.carry());

    expect(after.nextTaskId()).toBe('task-s-2');
    expect(after.nextSeq()).toBe(3);
    expect(after.view()).toEqual([{ seq: 2, kind: 'message', text: 'message 2', route: 'chat', taskId: undefined }]);
  });

  it('an update waiting on a queued command gets the result the command was taken with', () => {
    const queue = new MessageQueue('s');

    const before = queue.outcome(4);
    queue.settle(4, { kind: 'command', reply: 'done' });

    expect(before).toBeUndefined();
    expect(queue.outcome(4)).toEqual({ kind: 'command', reply: 'done' });
  });

  it('a task id can be handed out once its child has been started', () => {
    const queue = new MessageQueue('s');
    const id = queue.nextTaskId();

    const before = queue.hasStarted(id);
    queue.started(id);

    expect(before).toBe(false);
    expect(queue.hasStarted(id)).toBe(true);
  });
});
