/** The only single-dash flag; flags are otherwise `--long`. */
const SHORT_FLAGS = new Set(['-h']);

/** Put before a word so that commander reads it as a value; argv cannot hold NUL, so no real word carries it. */
const MARK = '\u0000';

/**
 * Words starting with a single `-` (but `-h`) are values, not flags: the last four characters of a
 * client secret may start with `-` (`svc app secret revoke <app> -x4Z`), and commander would take
 * them for unknown short flags. They are marked while the line is parsed.
 */
export const protectDashValues = (argv: readonly string[]): string[] =>
  argv.map((word) => (/^-[^-]/.test(word) && !SHORT_FLAGS.has(word) ? `${MARK}${word}` : word));

/** A value, or a message quoting one, as the operator typed it. */
export const unprotect = (text: string): string => text.replaceAll(MARK, '');
