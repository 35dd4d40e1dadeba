// The one parser of the API's server-sent event streams (api/sse.ts writes them), an ES module: the web page imports
// it (client.js), and the CLI and the tests load it as it is. Plain JavaScript, because the page's scripts are served
// as they are, unbuilt.

/** One frame's `id`, `event` and `data` fields, each only when the frame has it (comments are skipped). */
export function parseFrame(text) {
  const frame = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('data: ')) {
      frame.data = frame.data === undefined ? line.slice(6) : frame.data + '\n' + line.slice(6);
    } else if (line.startsWith('id: ')) frame.id = line.slice(4);
    else if (line.startsWith('event: ')) frame.event = line.slice(7);
  }
  return frame;
}

/** Takes the stream's text as it arrives, in pieces of any size; returns the frames each piece completes. */
export function createFrameParser() {
  let buffer = '';
  return {
    push: function (text) {
      buffer += text;
      const frames = [];
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        frames.push(parseFrame(buffer.slice(0, end)));
        buffer = buffer.slice(end + 2);
      }
      return frames;
    },
  };
}
