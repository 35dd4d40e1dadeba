/** Types of web/visible.js, for the CLI and the tests that require it. */

/** Newlines and tabs kept; every other control or bidirectional character replaced by a visible stand-in. */
export function visibleText(text: string): string;
/** The same, and newlines and tabs shown too (␤, ␉): the text stays on one line. */
export function visibleLine(text: string): string;
