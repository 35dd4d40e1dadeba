import { definitions, definitionsNote, whereDefined, type Definition } from '../../activities/project/definitions';

const PY = `import re


def normalize(text):
    """Like "def not_this(x):" in a docstring.

    def nor_this():
    """
    def inner():
        return 1
    return inner()


class Circle:
    def __init__(self, r):
        self.r = r

    async def area(self):
        return 3.14 * self.r ** 2

    class Meta:
        def field(self):
            pass


async def fetch_all(urls):
    pass
`;

describe('definitions', () => {
  it('reads Python by indentation: functions and classes at the margin, the methods of a class', () => {
    expect(definitions('geo/shapes.py', PY)).toEqual([
      { kind: 'function', name: 'normalize', line: 4 },
      { kind: 'class', name: 'Circle', line: 14 },
      { kind: 'method', name: '__init__', of: 'Circle', line: 15 },
      { kind: 'method', name: 'area', of: 'Circle', line: 18 },
      { kind: 'method', name: 'field', of: 'Meta', line: 22 },
      { kind: 'function', name: 'fetch_all', line: 26 },
    ]);
  });

  it('reads JavaScript and TypeScript: function statements, classes, arrow functions and exports', () => {
    const js = [
      "'use strict';",
      'function formatPercent(ratio) {',
      'export async function load(url) {}',
      'export default class Store {',
      '  get(key) { return 1; }',
      '}',
      'const slugify = (s) => s.toLowerCase();',
      'export const parse = async (s: string): Promise<number> => 1;',
      'const limit = 30;',
      'exports.handleRefund = function (order) {};',
      'const add = x => x + 1;',
    ].join('\n');
    expect(definitions('src/format.ts', js).map((d) => `${d.kind} ${d.name} ${d.line}`)).toEqual([
      'function formatPercent 2',
      'function load 3',
      'class Store 4',
      'function slugify 7',
      'function parse 8',
      'function handleRefund 10',
      'function add 11',
    ]);
  });

  it('reads shell, Go, Ruby, Rust and PHP functions, and the classes of Java', () => {
    const names = (path: string, text: string) => definitions(path, text).map((d) => d.name);
    expect(names('backup.sh', 'set -e\nlog() {\n  echo "$1"\n}\nfunction copy_all {\n}\necho done\n')).toEqual([
      'log',
      'copy_all',
    ]);
    expect(
      names('main.go', 'package main\ntype Server struct {}\nfunc (s *Server) Start() error {\nfunc main() {\n')
    ).toEqual(['Server', 'Start', 'main']);
    expect(names('user.rb', 'class User\n  def self.find(id)\n  def valid?\n')).toEqual(['User', 'find', 'valid?']);
    expect(names('lib.rs', 'pub struct Config {}\npub(crate) async fn load() {}\nfn main() {}\n')).toEqual([
      'Config',
      'load',
      'main',
    ]);
    expect(names('a.php', '<?php\nfinal class Cart {\n  public static function total($x) {\n')).toEqual([
      'Cart',
      'total',
    ]);
    expect(names('Shape.java', 'public abstract class Shape {\n  public double area() { return 0; }\n')).toEqual([
      'Shape',
    ]);
  });

  it('finds nothing in a file that is not code it reads', () => {
    expect(definitions('notes.md', 'def not_code():\nclass Nope:\n')).toEqual([]);
    expect(definitions('data.csv', 'function,class\n')).toEqual([]);
  });
});

describe('definitionsNote', () => {
  it('counts what a file defines, with the names, for the heading it is shown under', () => {
    expect(definitionsNote(definitions('geo/shapes.py', PY))).toBe(
      'defines 2 functions: normalize, fetch_all; 1 class: Circle (methods __init__, area)'
    );
    expect(definitionsNote(definitions('one.py', 'def only():\n    pass\n'))).toBe('defines 1 function: only');
    expect(definitionsNote([])).toBe('');
  });
});

describe('whereDefined', () => {
  const index = new Map<string, Definition[]>(
    [
      [
        'app.py',
        definitions('app.py', 'from billing.core.mailer import send_invoice\n\ndef run():\n    send_invoice(1)\n'),
      ],
      [
        'billing/core/mailer.py',
        definitions('billing/core/mailer.py', 'import smtplib\n\n\ndef send_invoice(order):\n'),
      ],
      ['src/shapes.py', PY],
    ].map(([p, d]) => [p as string, typeof d === 'string' ? definitions(p as string, d) : d])
  );

  it('says where a name the request mentions in the shape of code is defined, not where it is used', () => {
    expect(whereDefined("Where's send_invoice actually defined? Not where it's called.", index)).toEqual([
      'send_invoice: a function in billing/core/mailer.py, line 4',
    ]);
  });

  it('takes a class by its name as a word, a method as Class.method, and a name written as a call', () => {
    expect(whereDefined('Which file defines the class Circle?', index)).toEqual([
      'Circle: a class in src/shapes.py, line 14',
    ]);
    expect(whereDefined('Make Circle.area round to 2 places', index)).toEqual([
      'Circle: a class in src/shapes.py, line 14',
      'Circle.area: a method of the class Circle in src/shapes.py, line 18',
    ]);
    expect(whereDefined('normalize(" a ") should give "a"', index)).toEqual([
      'normalize: a function in src/shapes.py, line 4',
    ]);
  });

  it('does not take a plain word for the function of that name, in any language', () => {
    expect(whereDefined('run the tests and normalize the output', index)).toEqual([]);
    expect(whereDefined('Führe run aus', index)).toEqual([]);
    expect(whereDefined('请找出 send_invoice 的定义', index)).toEqual([
      'send_invoice: a function in billing/core/mailer.py, line 4',
    ]);
  });
});
