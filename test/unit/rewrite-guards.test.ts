/**
 * What makes a whole-file rewrite unusable as it came: Klea's own name brought into a user's file, and the question
 * the user is asked instead.
 */
import {
  blankLeft,
  factQuestion,
  leaksOwnName,
  ownNameQuestion,
  placeholders,
  swappedBlank,
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
  it("is a bracketed blank, in any language, put where the file's own blank was", () => {
    const was = 'Ask <USERNAME> for review before merging.\n';
    const sources = [was, 'Put my username in.'];
    expect(swappedBlank(was, 'Ask [Your GitHub Username] for review before merging.\n', sources)).toBe(
      '[Your GitHub Username]'
    );
    const license = 'Copyright (c) 2026 <COPYRIGHT HOLDER>\n';
    expect(swappedBlank(license, 'Copyright (c) 2026 <your name>\n', [license])).toBe('<your name>');
    expect(swappedBlank(license, 'Copyright (c) 2026 [YOUR_NAME]\n', [license])).toBe('[YOUR_NAME]');
    expect(swappedBlank(license, 'Copyright (c) 2026 [Ihr Name]\n', [license])).toBe('[Ihr Name]');
    expect(swappedBlank(license, '版权所有 (c) 2026 [你的 名字]\n', [license])).toBe('[你的 名字]');
  });

  it('is not a blank the write kept, one the request gave, one beside the blanks the file keeps, nor a new file', () => {
    const was = 'Ask <USERNAME> for review before merging.\n';
    expect(swappedBlank(was, was, [was])).toBeNull();
    // The user asked for that blank.
    expect(swappedBlank(was, 'Ask <REVIEWER> for review.\n', [was, 'Make it say <REVIEWER>.'])).toBeNull();
    // Filled in with a fact: no blank left.
    expect(swappedBlank(was, 'Ask ada-codes for review before merging.\n', [was])).toBeNull();
    // A usage line added beside the file's own blank, which stays.
    const usage = 'Run `python wc.py <FILE>`.\n';
    expect(swappedBlank(usage, `${usage}Serve it with \`--port <PORT>\`.\n`, [usage])).toBeNull();
    expect(swappedBlank(null, 'Copyright (c) 2026 [Your Name]\n', [])).toBeNull();
  });

  it('is not code, markup or a link that looks alike', () => {
    const code = [
      'row[user_id] = data[MAX_SIZE]',
      'def f(x: Dict[str, Any]) -> List[int]: ...',
      'if [ -d backup ]; then cp notes/*.txt backup/; fi',
      "re.sub(r'[a-z_]+', '', s)",
      '- [ ] write the docs\n- [x] ship it',
      '[Read the guide](docs/guide.md) and [the FAQ][faq] and [[Page Title]]',
      '[faq]: docs/faq.md',
      '## [Unreleased]\n[DEFAULT]\nport = 8080',
      '<div class="note"><br/></div> Vec<T> Option<Box<u8>>',
      '![build status](ci.svg)',
    ].join('\n');
    expect(placeholders(code)).toEqual([]);
    // Blanks of their own kind, written beside a blank the file keeps, are no swap either.
    const more = 'backup.sh <SOURCE_DIR> <DEST_DIR>\n<script setup>\necho "[DRY RUN] x"\n';
    const kept = 'Usage: tool <FILE>\n';
    expect(swappedBlank(kept, `${kept}${code}\n${more}`, [kept])).toBeNull();
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

describe('a blank the request points at, left by a rewrite', () => {
  const before = 'a\nCopyright <COPYRIGHT HOLDER>\nb\n';
  it('is one the request names, the file holds and every line holding it is kept; none for a new file', () => {
    expect(blankLeft(before, before, 'Fill in `<COPYRIGHT HOLDER>`.')).toBe('<COPYRIGHT HOLDER>');
    expect(blankLeft(before, 'A\nCopyright <COPYRIGHT HOLDER>\nb\n', 'LICENSE says <COPYRIGHT HOLDER>')).toBe(
      '<COPYRIGHT HOLDER>'
    );
    // An answer that held no file leaves it too.
    expect(blankLeft(before, null, 'Fill in <COPYRIGHT HOLDER>')).toBe('<COPYRIGHT HOLDER>');
    // Its line changed (filled in, or a blank of the model's own, which `swappedBlank` asks about): not left.
    expect(blankLeft(before, 'a\nCopyright Ada\nb\n', 'Fill in <COPYRIGHT HOLDER>')).toBeNull();
    // A blank the request names that the file does not hold, a request with no blank, a new file: none.
    expect(blankLeft(before, before, 'Fill in <AUTHOR NAME>')).toBeNull();
    expect(blankLeft(before, before, 'Fill in the holder.')).toBeNull();
    expect(blankLeft(null, 'x\n', 'Fill in <COPYRIGHT HOLDER>')).toBeNull();
  });
});
