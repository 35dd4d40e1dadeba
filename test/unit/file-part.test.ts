/**
 * The part of a long file a step is about (activities/llm/file-part.ts): found by the shape of a name of code and
 * the file's layout, and put back with the rest of the file byte for byte.
 */
import { codeNames, filePart, PART_MAX_LINES, partText, withPart } from '../../activities/llm/file-part';

/** A module of `n` functions `handler0` … with blank lines between them, and one called `applyDiscount`. */
function module(n: number): string {
  const fns = Array.from({ length: n }, (_, i) =>
    i === Math.floor(n / 2)
      ? 'function applyDiscount(order) {\n  if (order.total > 100) {\n\n    return order.total * 0.9;\n  }\n  return order.total;\n}'
      : `function handler${i}(order) {\n  return order.id + ${i};\n}`
  );
  return `'use strict';\n\n${fns.join('\n\n')}\n\nmodule.exports = { applyDiscount };\n`;
}

describe('names of code in a text', () => {
  it('by shape in any language, and anything in backticks; each once, in order', () => {
    expect(codeNames('Dans shop.js, `total` doit utiliser applyDiscount et MAX_ITEMS, pas max_items2.')).toEqual([
      'total',
      'applyDiscount',
      'MAX_ITEMS',
      'max_items2',
    ]);
    expect(codeNames('Make the refund window 45 days instead of 30.')).toEqual([]);
  });
});

describe('the part of a long file around a name', () => {
  it('is the top-level block that holds it, blank lines inside included, and is put back byte for byte', () => {
    const text = module(40);
    const part = filePart(text, ['missingName', 'applyDiscount'], 2000)!;
    expect(partText(part)).toBe(
      'function applyDiscount(order) {\n  if (order.total > 100) {\n\n    return order.total * 0.9;\n  }\n  return order.total;\n}\n'
    );
    expect(part.total).toBe(text.replace(/\n$/, '').split('\n').length);
    expect(withPart(part, partText(part))).toBe(text);
    const changed = withPart(part, partText(part).replace('0.9', '0.85'));
    expect(changed).toBe(text.replace('0.9', '0.85'));
  });

  it('a definition is taken over a use further in, and a Python block with its decorator', () => {
    const py = [
      'import os',
      '',
      '',
      'def run():',
      '    return price_of_tea() * 2',
      '',
      '',
      '@cached',
      'def price_of_tea():',
      '    """Euros."""',
      '    return 4.20',
      '',
      '',
      'def other():',
      '    pass',
      '',
    ].join('\n');
    const part = filePart(py, ['price_of_tea'], 2000)!;
    expect([part.from, part.to]).toEqual([8, 11]);
    expect(partText(part)).toBe('@cached\ndef price_of_tea():\n    """Euros."""\n    return 4.20\n');
  });

  it('a block longer than the most lines a part holds is shown around the name, within bounds', () => {
    const body = Array.from({ length: 200 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `function big() {\n${body}\n  return v150 + targetName;\n}\n`;
    const part = filePart(text, ['targetName'], 100_000)!;
    expect(part.to - part.from + 1).toBe(PART_MAX_LINES);
    expect(partText(part)).toContain('targetName');
    const small = filePart(text, ['targetName'], 400)!;
    expect(partText(small).length).toBeLessThanOrEqual(400);
    expect(partText(small)).toContain('targetName');
  });

  it('none when the file holds none of the names whole (a longer name is not it)', () => {
    expect(filePart(module(40), ['applyDiscountAll', 'Discount'], 2000)).toBeNull();
  });
});
