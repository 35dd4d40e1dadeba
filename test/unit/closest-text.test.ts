/** What an edit whose old_string is not in the file is shown instead: the text it most likely meant. */
import { closestText, similarity } from '../../tools/workspace/closest-text';

const SETTINGS = 'app:\n  name: inventory-service\n  workers: 2\nlogging:\n  level: info\n  file: logs/app.log\n';

describe('the closest text to a misquoted old_string', () => {
  it('is the line it most likely meant, with its indentation, and where it is', () => {
    expect(closestText(SETTINGS, 'level: info')).toEqual({ line: 5, text: '  level: info' });
    expect(closestText(SETTINGS, 'logging_level: info')).toEqual({ line: 5, text: '  level: info' });
    expect(closestText('def add(a, b):\n    return a - b\n', 'return a-b')).toEqual({
      line: 2,
      text: '    return a - b',
    });
  });

  it('spans as many lines as the old_string has', () => {
    expect(closestText(SETTINGS, 'logging:\n level: info')).toEqual({ line: 4, text: 'logging:\n  level: info' });
  });

  it('is nothing when no text is alike enough, or two are equally alike', () => {
    expect(closestText(SETTINGS, 'placeholder text here')).toBeNull();
    expect(closestText('x = 1\ny = 1\n', 'z = 1')).toBeNull();
    expect(closestText(SETTINGS, '   ')).toBeNull();
  });

  it('similarity is 1 for equal texts and 0 for texts with nothing in common', () => {
    expect(similarity('abc', 'abc')).toBe(1);
    expect(similarity('abc', 'xyz')).toBe(0);
  });
});
