import { moduleOf, topLevelDefinitions, withMissingImports } from '../../activities/llm/python-imports';

const wordcount = {
  path: 'wordcount.py',
  text: 'import string\n\n\ndef count_words(text):\n    return {}\n\n\nclass Counter:\n    pass\n\n\ndef _helper():\n    def inner():\n        pass\n',
};

describe('a Python file written whole gets the imports of the project functions it calls', () => {
  it('a test that calls the function it tests, never imported, gets the import after its own imports', () => {
    const test =
      'import unittest\n\n\nclass T(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(count_words(""), {})\n';
    const out = withMissingImports('test_wordcount.py', test, [wordcount]);
    expect(out.added).toEqual(['from wordcount import count_words']);
    expect(out.text).toBe(
      'import unittest\nfrom wordcount import count_words\n\n\nclass T(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(count_words(""), {})\n'
    );
  });

  it('names from one module are imported in one line; a file with no imports gets it at its top, after #! and __future__', () => {
    const script =
      '#!/usr/bin/env python3\nfrom __future__ import annotations\nc = Counter()\nprint(count_words("a"))\n';
    const out = withMissingImports('tools/run.py', script, [{ ...wordcount, path: 'lib/wordcount.py' }]);
    expect(out.added).toEqual(['from lib.wordcount import Counter, count_words']);
    expect(out.text.split('\n').slice(0, 3)).toEqual([
      '#!/usr/bin/env python3',
      'from __future__ import annotations',
      'from lib.wordcount import Counter, count_words',
    ]);
  });

  it('the control: a name imported, defined, bound, used as a method, in a string or a comment, or by `import *`, is left alone', () => {
    const cases = [
      'from wordcount import count_words\nprint(count_words("a"))\n',
      'import wordcount\nprint(wordcount.count_words("a"))\n',
      'def count_words(t):\n    return 1\nprint(count_words("a"))\n',
      'count_words = len\nprint(count_words("a"))\n',
      'def f(count_words):\n    return count_words("a")\n',
      'for count_words in [len]:\n    count_words("a")\n',
      'print("count_words(x) counts")\n',
      '# count_words("a") is what we test\n',
      'from wordcount import *\nprint(count_words("a"))\n',
      'print(_helper())\n',
    ];
    for (const text of cases) expect(withMissingImports('t.py', text, [wordcount])).toEqual({ text, added: [] });
  });

  it('the control: a name two shown files define, a file not importable by its path, a part of a long file, the file itself', () => {
    const call = 'print(count_words("a"))\n';
    expect(withMissingImports('t.py', call, [wordcount, { ...wordcount, path: 'other.py' }]).added).toEqual([]);
    expect(withMissingImports('t.py', call, [{ ...wordcount, path: 'my-tools/wc.py' }]).added).toEqual([]);
    expect(withMissingImports('t.py', call, [{ ...wordcount, path: 'wc.txt' }]).added).toEqual([]);
    const part = { from: 1, to: 3, total: 300, whole: wordcount.text };
    expect(withMissingImports('t.py', call, [{ ...wordcount, part }]).added).toEqual([]);
    expect(withMissingImports('wordcount.py', call, [wordcount]).added).toEqual([]);
  });

  it('a multi-line import block is not split: the line goes before it', () => {
    const text = 'import os\nfrom x import (\n    a,\n)\nprint(count_words("a"))\n';
    expect(withMissingImports('t.py', text, [wordcount]).text).toBe(
      'import os\nfrom wordcount import count_words\nfrom x import (\n    a,\n)\nprint(count_words("a"))\n'
    );
  });

  it("a call as a later argument or in a list is a call; a built-in's name is the built-in, though a module defines it", () => {
    const args = 'assert [count_words("a"), count_words("a b")] == [1, 2]\nself.assertEqual(3, count_words("a b c"))\n';
    expect(withMissingImports('t.py', args, [wordcount]).added).toEqual(['from wordcount import count_words']);
    const todo = { path: 'todo.py', text: 'def list():\n    pass\n\n\ndef add(x):\n    pass\n' };
    expect(withMissingImports('t.py', 'print(list(range(2)))\nadd(1)\n', [todo]).added).toEqual([
      'from todo import add',
    ]);
  });

  it('the import goes after the opening comments and the docstring, never inside it', () => {
    const text =
      '# -*- coding: utf-8 -*-\n"""Tests for the counter,\nfrom wordcount.\n"""\n\nprint(count_words("a"))\n';
    expect(withMissingImports('t.py', text, [wordcount]).text).toBe(
      '# -*- coding: utf-8 -*-\n"""Tests for the counter,\nfrom wordcount.\n"""\n\nfrom wordcount import count_words\nprint(count_words("a"))\n'
    );
    const oneLine = '"""Tests."""\nimport os\nprint(count_words("a"))\n';
    expect(withMissingImports('t.py', oneLine, [wordcount]).text).toBe(
      '"""Tests."""\nimport os\nfrom wordcount import count_words\nprint(count_words("a"))\n'
    );
  });

  it('reads definitions at the top level only, and modules by their path', () => {
    expect(topLevelDefinitions(wordcount.text)).toEqual(['count_words', 'Counter', '_helper']);
    expect(
      ['a.py', 'pkg/sub/m.py', 'pkg/__init__.py', './b.py', 'x-y.py', 'a.txt', 'lib/class.py'].map(moduleOf)
    ).toEqual(['a', 'pkg.sub.m', 'pkg', 'b', null, null, null]);
  });
});
