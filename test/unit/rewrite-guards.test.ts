/**
 * What makes a whole-file rewrite unusable as it came: Klea's own name brought into a user's file, and the question
 * the user is asked instead.
 */
import { leaksOwnName, ownNameQuestion } from '../../activities/llm/rewrite-guards';

describe("Klea's own name in a file it writes", () => {
  it('is a leak only when nothing the write went by holds the name', () => {
    expect(leaksOwnName('Copyright (c) 2026 Klea\n', ['Copyright (c) 2026 <HOLDER>\n', 'Fill in the holder.'])).toBe(
      true
    );
    expect(leaksOwnName('author = "KLEA"\n', [])).toBe(true);
    // The name the user gave, the project's own text, or the request: not a leak.
    expect(leaksOwnName('Copyright (c) 2026 Klea\n', ['Fill in the holder.', 'Answer: Klea'])).toBe(false);
    expect(leaksOwnName('# Klea agent\nmore\n', ['# Klea agent\n'])).toBe(false);
    // Inside a longer word it is no name.
    expect(leaksOwnName('kleanex = 1\nuklea\n', [])).toBe(false);
  });

  it('asks what the text it replaced should say, else what the line with the name should say', () => {
    expect(
      ownNameQuestion(
        'LICENSE',
        'MIT\nCopyright (c) 2026 <COPYRIGHT HOLDER>\nend\n',
        'MIT\nCopyright (c) 2026 Klea\nend\n'
      )
    ).toBe('What should replace "<COPYRIGHT HOLDER>" in LICENSE?');
    expect(ownNameQuestion('package.json', '{\n  "author": ""\n}\n', '{\n  "author": "Klea"\n}\n')).toBe(
      'package.json needs a fact only you know: what should it say in place of Klea in `"author": "Klea"`?'
    );
    expect(ownNameQuestion('AUTHORS', null, 'Klea <klea@example.com>\n')).toBe(
      'AUTHORS needs a fact only you know: what should it say in place of Klea in `Klea <klea@example.com>`?'
    );
  });
});
