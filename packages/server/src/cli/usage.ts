import type { Argument, Command, Option } from 'commander';

/** The words that lead to a command from the program: `['app', 'secret', 'rotate']`. */
export function wordsOf(command: Command): string[] {
  const words: string[] = [];
  for (let current: Command | null = command; current?.parent; current = current.parent) words.unshift(current.name());
  return words;
}

/** The commands a group holds, in the order the usage lists them (`svc help` is listed apart). */
export function leavesOf(command: Command): Command[] {
  const children = command.commands.filter((child) => child.name() !== 'help');
  return children.length === 0 ? [command] : children.flatMap(leavesOf);
}

/** `--type percentage|fixed` for a flag with a fixed set of values, else the flag as commander was given it. */
const flagOf = (option: Option): string => (option.argChoices ? `${option.long} ${option.argChoices.join('|')}` : option.flags);

const optionUsage = (option: Option): string => (option.mandatory ? flagOf(option) : `[${flagOf(option)}]`);

function argumentUsage(argument: Argument): string {
  const name = `<${argument.name()}>${argument.variadic ? '...' : ''}`;
  return argument.required ? name : `[${name}]`;
}

/** `svc installation list [--store <storeId>] [--app <appId>]`, from the command commander parses by, so they never drift apart. */
export function usageLine(command: Command): string {
  const parts = ['svc', ...wordsOf(command), ...command.registeredArguments.map(argumentUsage), ...command.options.map(optionUsage)];
  return parts.join(' ');
}

const GLOBAL_NOTE = 'Every command also takes --json (one JSON document on stdout) and --help.';

/** The usage of one command, or of a group with the pointer to `svc help`. */
export function usageText(commands: readonly Command[]): string[] {
  const [only] = commands;
  if (commands.length === 1 && only) return [`usage: ${usageLine(only)}`, `  ${only.description()}`, GLOBAL_NOTE];
  return [
    'usage:',
    ...commands.flatMap((command) => [`  ${usageLine(command)}`, `      ${command.description()}`]),
    '  svc help [<command>]',
    '      Show this, or the usage of one command or group (`svc help app secret`).',
    '',
    GLOBAL_NOTE,
  ];
}
