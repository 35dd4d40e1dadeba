import { createFrameParser, parseFrame } from '../../web/sse';

describe('the event-stream parser the web page, the CLI and the tests share (web/sse.js)', () => {
  // As api/sse.ts writes a stream: a retry hint, events, a heartbeat comment, an error frame.
  const stream =
    'retry: 2000\n\n' +
    'id: 1\nevent: context\ndata: {"seq":1,"type":"context"}\n\n' +
    ': heartbeat\n\n' +
    'id: 2\nevent: answer\ndata: {"seq":2,"type":"answer","text":"größer"}\n\n' +
    'event: stream_error\ndata: {"message":"gone"}\n\n';

  it('reads every frame, whatever size the pieces arrive in', () => {
    for (const size of [1, 3, 7, stream.length]) {
      // Arrange
      const parser = createFrameParser();
      const frames = [];
      // Act
      for (let i = 0; i < stream.length; i += size) frames.push(...parser.push(stream.slice(i, i + size)));
      // Assert
      expect(frames).toEqual([
        {},
        { id: '1', event: 'context', data: '{"seq":1,"type":"context"}' },
        {},
        { id: '2', event: 'answer', data: '{"seq":2,"type":"answer","text":"größer"}' },
        { event: 'stream_error', data: '{"message":"gone"}' },
      ]);
    }
  });

  it('keeps an unfinished frame until its blank line arrives', () => {
    const parser = createFrameParser();

    expect(parser.push('id: 3\ndata: {"seq":3}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ id: '3', data: '{"seq":3}' }]);
  });

  it('joins the data lines of one frame with newlines', () => {
    expect(parseFrame('data: a\ndata: b')).toEqual({ data: 'a\nb' });
  });
});
