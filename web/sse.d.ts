/** Types of web/sse.js, for the CLI and the tests that require it. */

/** A frame of the stream; a field is present only when the frame has it. */
export interface SseFrame {
  id?: string;
  event?: string;
  /** The frame's data lines, joined by newlines. */
  data?: string;
}

export interface SseFrameParser {
  /** Takes the stream's text as it arrives, in pieces of any size; returns the frames each piece completes. */
  push(text: string): SseFrame[];
}

export function createFrameParser(): SseFrameParser;
export function parseFrame(text: string): SseFrame;
