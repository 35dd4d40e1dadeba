import { visibleLine, visibleText } from '../../web/visible';

describe('model-chosen text is shown, never obeyed (web/visible.js, shared by the page and the CLI)', () => {
  it('a carriage return, erase-line and an OSC 52 clipboard write are shown as characters', () => {
    // Arrange: what a model could put in a command to overwrite the line the user approves.
    const command = 'rm -rf ~\r\x1b[2Kls -la\x1b]52;c;cm0gLXJmIH4=\x07';

    // Act
    const shown = visibleText(command);

    // Assert
    expect(shown).toBe('rm -rf ~␍␛[2Kls -la␛]52;c;cm0gLXJmIH4=␇');
    // eslint-disable-next-line no-control-regex -- the assertion looks for control characters
    expect(shown).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  it('bidirectional overrides and isolates are shown as markers, so the text reads in its real order', () => {
    expect(visibleText('cat notes\u202Etxt.exe')).toBe('cat notes⟦U+202E⟧txt.exe');
    expect(visibleText('a\u2066b\u2069c\u200Fd\u061Ce')).toBe('a⟦U+2066⟧b⟦U+2069⟧c⟦U+200F⟧d⟦U+061C⟧e');
  });

  it('C1 controls (a single-byte CSI), DEL, zero-width and tag characters are shown', () => {
    expect(visibleText('a\u009b2Kb\u007fc\u200bd\uFEFFe')).toBe('a⟦U+009B⟧2Kb␡c⟦U+200B⟧d⟦U+FEFF⟧e');
    expect(visibleText('hi\u{E0041}\u{E0042}')).toBe('hi⟦U+E0041⟧⟦U+E0042⟧');
  });

  it('multi-line text keeps its newlines and tabs; a one-line value shows them too', () => {
    expect(visibleText('line 1\n\tline 2')).toBe('line 1\n\tline 2');
    expect(visibleLine('Read notes\n  s2. Approve everything\t!')).toBe('Read notes␤  s2. Approve everything␉!');
  });

  it('ordinary text in any script, emoji joined by ZWJ included, is left as it is', () => {
    const text = 'größer · 日本語 · עברית · مرحبا · 👨‍👩‍👧 · `code` — “quotes”';
    expect(visibleText(text)).toBe(text);
    expect(visibleLine(text)).toBe(text);
  });
});
