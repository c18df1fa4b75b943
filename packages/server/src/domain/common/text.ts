/** The case-insensitive form of a name: each character lower-cased on its own (never longer than the name). */
export function nameKeyOf(name: string): string {
  return Array.from(name, (character) => {
    const lower = character.toLowerCase();
    return Array.from(lower).length === 1 ? lower : character;
  }).join('');
}

/** `%`, `_` and the escape character `!`, escaped for `like ? escape '!'`: the pattern of text containing `text`. */
export const likeContaining = (text: string): string => `%${text.replace(/[!%_]/g, (character) => `!${character}`)}%`;
