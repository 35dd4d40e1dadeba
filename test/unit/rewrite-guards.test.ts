/**
 * What makes a whole-file rewrite unusable as it came: Klea's own name brought into a user's file, and the question
 * the user is asked instead.
 */
import {
  factQuestion,
  leaksOwnName,
  newPlaceholder,
  ownNameQuestion,
  placeholders,
} from '../../activities/llm/rewrite-guards';

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

describe('a blank a write made up for a fact only the user knows', () => {
  it('is a bracketed placeholder, in any language, that nothing the write went by holds', () => {
    const was = 'Ask <USERNAME> for review before merging.\n';
    expect(newPlaceholder('Ask [Your GitHub Username] for review.\n', [was, 'Put my username in.'])).toBe(
      '[Your GitHub Username]'
    );
    expect(newPlaceholder('Copyright (c) 2026 <your name>\n', [])).toBe('<your name>');
    expect(newPlaceholder('author = "[YOUR_NAME]"\n', [])).toBe('[YOUR_NAME]');
    expect(newPlaceholder('Autor: [Ihr Name]\n', [])).toBe('[Ihr Name]');
    expect(newPlaceholder('作者：[你的 名字]\n', [])).toBe('[你的 名字]');
    // One the file or the request already holds is no new blank: the write kept it.
    expect(newPlaceholder(was, [was])).toBeNull();
  });

  it('is not code, markup or a link that looks alike', () => {
    const code = [
      'row[user_id] = data[MAX_SIZE]',
      'def f(x: Dict[str, Any]) -> List[int]: ...',
      'if [ -d backup ]; then cp notes/*.txt backup/; fi',
      "re.sub(r'[a-z_]+', '', s)",
      '- [ ] write the docs\n- [x] ship it',
      '[Read the guide](docs/guide.md) and [the FAQ][faq]',
      '[faq]: docs/faq.md',
      '## [Unreleased]\n[DEFAULT]\nport = 8080',
      '<div class="note"><br/></div> Vec<T> Option<Box<u8>>',
      '![build status](ci.svg)',
    ].join('\n');
    expect(placeholders(code)).toEqual([]);
    expect(newPlaceholder(code, [])).toBeNull();
  });

  it('asks what the text it replaced should say', () => {
    expect(
      factQuestion(
        'CONTRIBUTING.md',
        '# Contributing\nAsk <USERNAME> for review before merging.\n',
        '# Contributing\nAsk [Your GitHub Username] for review before merging.\n',
        (t) => t.includes('[Your GitHub Username]'),
        '[Your GitHub Username]'
      )
    ).toBe('What should replace "<USERNAME>" in CONTRIBUTING.md?');
  });
});
