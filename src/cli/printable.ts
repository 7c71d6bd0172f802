/**
 * Characters a terminal acts on or that change how text reads: C0 and C1 controls and DEL (escape
 * sequences set the title, clear the screen, move the cursor), line and paragraph separators, format
 * characters (bidi overrides reorder a line, zero-width ones hide text) and lone surrogates.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/**
 * `text` with every unprintable character shown as an escape (`\x1b`, `\u{202e}`), so that what a
 * resource holds is printed, never acted on by the terminal. Everything else (DNS escapes such as
 * `\.` and `\027`, letters of any script) is left as it is.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.codePointAt(0)!;
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}
