import { type ParseArgsConfig, parseArgs } from 'node:util';

/** One flag of a command. Flags with the same name must have the same type in every command (see `parseCommandLine`). */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
  readonly required?: boolean;
  /** What the value is, for the usage line: `--name <placeholder>`. */
  readonly placeholder?: string;
}

export interface CommandSpec {
  /** The words that name the command: `['app', 'secret', 'rotate']`. */
  readonly words: readonly string[];
  /** Names of the positional arguments after the words, in order; all are required. */
  readonly args: readonly string[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  readonly description: string;
}

type Values = ReturnType<typeof parseArgs>['values'];

/** A command line that names a command with well-formed arguments. */
export interface Invocation<C extends CommandSpec = CommandSpec> {
  readonly command: C;
  readonly json: boolean;
  readonly args: Readonly<Record<string, string>>;
  readonly values: Values;
}

export type ParsedLine<C extends CommandSpec> =
  | { kind: 'run'; invocation: Invocation<C> }
  | { kind: 'help'; commands: readonly C[] }
  | { kind: 'usage-error'; message: string; commands: readonly C[] };

/** Flags every command accepts. */
const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

const toParseArgsOptions = (options: Readonly<Record<string, OptionSpec>>): NonNullable<ParseArgsConfig['options']> => ({
  ...Object.fromEntries(Object.entries(options).map(([name, { type, multiple }]) => [name, { type, multiple: multiple ?? false }])),
  ...GLOBAL_OPTIONS,
});

const startsWith = (words: readonly string[], prefix: readonly string[]) => prefix.every((word, index) => words[index] === word);

/**
 * The first, lenient pass: which words were given, wherever the flags are. It knows every command's
 * flags so that a flag's value (`--store <id>`) is not mistaken for a command word.
 */
function scan(argv: readonly string[], specs: readonly CommandSpec[]): { words: string[]; help: boolean } {
  const options = toParseArgsOptions(Object.fromEntries(specs.flatMap((spec) => Object.entries(spec.options))));
  const { values, positionals } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true });
  return { words: positionals, help: values.help === true };
}

/** The command whose words the line starts with (the longest, so `app versions` is not `app`). */
function findCommand<C extends CommandSpec>(words: readonly string[], specs: readonly C[]): C | undefined {
  return specs.filter((spec) => startsWith(words, spec.words)).sort((a, b) => b.words.length - a.words.length)[0];
}

/** The commands sharing the longest known prefix of `words`: what to show for `svc store` or `svc store frobnicate`. */
function commandsUnder<C extends CommandSpec>(words: readonly string[], specs: readonly C[]): readonly C[] {
  for (let length = words.length; length > 0; length -= 1) {
    const group = specs.filter((spec) => startsWith(spec.words, words.slice(0, length)));
    if (group.length > 0) return group;
  }
  return specs;
}

const isParseArgsError = (error: unknown): error is { code: string; message: string } =>
  typeof error === 'object' &&
  error !== null &&
  'code' in error &&
  typeof error.code === 'string' &&
  error.code.startsWith('ERR_PARSE_ARGS_') &&
  'message' in error &&
  typeof error.message === 'string';

/**
 * The message for a line parseArgs refused, or undefined for any other error. Recognised by code,
 * not by `instanceof`, which fails across realms (jest's VM). Its unknown-option message suggests
 * `--` quoting, which only confuses here, so that one is shortened.
 */
function parseArgsMessage(error: unknown): string | undefined {
  if (!isParseArgsError(error)) return undefined;
  const unknown = error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']+)'/.exec(error.message) : null;
  return unknown ? `unknown flag ${unknown[1]}` : error.message;
}

/** Whether the words name a group of commands (`store`, `app secret`) rather than nothing at all. */
const isGroup = (words: readonly string[], specs: readonly CommandSpec[]) => specs.some((spec) => startsWith(spec.words, words));

function missingOptions(spec: CommandSpec, values: Values): string[] {
  return Object.entries(spec.options)
    .filter(([name, option]) => option.required && values[name] === undefined)
    .map(([name]) => `--${name}`);
}

/** The second, strict pass over a line whose command is known: only its flags, exactly its arguments. */
function parseFor<C extends CommandSpec>(argv: readonly string[], command: C): ParsedLine<C> {
  const usageError = (message: string): ParsedLine<C> => ({ kind: 'usage-error', message, commands: [command] });
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: toParseArgsOptions(command.options), strict: true, allowPositionals: true });
  } catch (error) {
    const message = parseArgsMessage(error);
    if (message === undefined) throw error;
    return usageError(message);
  }
  const given = parsed.positionals.slice(command.words.length);
  if (given.length < command.args.length) return usageError(`missing <${command.args[given.length]}>`);
  if (given.length > command.args.length) return usageError(`unexpected argument "${given[command.args.length]}"`);
  const missing = missingOptions(command, parsed.values);
  if (missing.length > 0) return usageError(`missing ${missing.join(', ')}`);
  const args = Object.fromEntries(command.args.map((name, index) => [name, given[index] as string]));
  return { kind: 'run', invocation: { command, json: parsed.values.json === true, args, values: parsed.values } };
}

/** The only single-dash flag; flags are otherwise `--long`. */
const SHORT_FLAGS = new Set(['-h']);

/** Stands for a value starting with one `-` while the line is parsed (argv cannot hold NUL). */
const dashPlaceholder = (index: number) => `\u0000${index}`;

/**
 * Words starting with a single `-` (but `-h`) are values, not flags: the last four characters of a
 * client secret may start with `-` (`svc app secret revoke <app> -x4Z`). They are parsed as
 * placeholders and put back in the arguments.
 */
function protectDashValues(argv: readonly string[]): { line: string[]; restore: (value: string) => string } {
  const values: string[] = [];
  const line = argv.map((word) => {
    if (!/^-[^-]/.test(word) || SHORT_FLAGS.has(word)) return word;
    values.push(word);
    return dashPlaceholder(values.length - 1);
  });
  const restore = (text: string) => text.replace(/\u0000(\d+)/g, (placeholder, index: string) => values[Number(index)] ?? placeholder);
  return { line, restore };
}

/** The parsed line with every placeholder put back (in arguments, flag values and messages). */
function restored<C extends CommandSpec>(parsed: ParsedLine<C>, restore: (text: string) => string): ParsedLine<C> {
  if (parsed.kind === 'usage-error') return { ...parsed, message: restore(parsed.message) };
  if (parsed.kind !== 'run') return parsed;
  const restoreValue = (value: unknown): unknown => (typeof value === 'string' ? restore(value) : Array.isArray(value) ? value.map(restoreValue) : value);
  const { invocation } = parsed;
  return {
    kind: 'run',
    invocation: {
      ...invocation,
      args: Object.fromEntries(Object.entries(invocation.args).map(([name, value]) => [name, restore(value)])),
      values: Object.fromEntries(Object.entries(invocation.values).map(([name, value]) => [name, restoreValue(value)])) as Values,
    },
  };
}

/**
 * Reads a command line in two passes: a lenient one finds the command (flags may come anywhere, so
 * `svc --json store list` works), a strict one checks the line against that command alone.
 */
export function parseCommandLine<C extends CommandSpec>(argv: readonly string[], specs: readonly C[]): ParsedLine<C> {
  const { line, restore } = protectDashValues(argv);
  return restored(parseLine(line, specs), restore);
}

function parseLine<C extends CommandSpec>(argv: readonly string[], specs: readonly C[]): ParsedLine<C> {
  const { words, help } = scan(argv, specs);
  if (words[0] === 'help') return { kind: 'help', commands: commandsUnder(words.slice(1), specs) };
  const command = findCommand(words, specs);
  if (help) return { kind: 'help', commands: command ? [command] : commandsUnder(words, specs) };
  if (!command) {
    const message = words.length === 0 ? 'no command given' : `${isGroup(words, specs) ? 'incomplete' : 'unknown'} command "${words.join(' ')}"`;
    return { kind: 'usage-error', message, commands: commandsUnder(words, specs) };
  }
  return parseFor(argv, command);
}

function optionUsage(name: string, option: OptionSpec): string {
  const flag = option.type === 'boolean' ? `--${name}` : `--${name} ${option.placeholder ?? `<${name}>`}`;
  const repeated = option.multiple ? `${flag}...` : flag;
  return option.required ? repeated : `[${repeated}]`;
}

/** `svc installation list [--store <storeId>] [--app <appId>]`, built from the spec so usage never drifts from parsing. */
export function usageLine(spec: CommandSpec): string {
  const parts = [
    'svc',
    ...spec.words,
    ...spec.args.map((name) => `<${name}>`),
    ...Object.entries(spec.options).map(([name, option]) => optionUsage(name, option)),
  ];
  return parts.join(' ');
}

const GLOBAL_NOTE = 'Every command also takes --json (one JSON document on stdout) and --help.';

/** The usage of one command, or of a group with the pointer to `svc help`. */
export function usageText(specs: readonly CommandSpec[]): string[] {
  const [only] = specs;
  if (specs.length === 1 && only) return [`usage: ${usageLine(only)}`, `  ${only.description}`, GLOBAL_NOTE];
  return [
    'usage:',
    ...specs.flatMap((spec) => [`  ${usageLine(spec)}`, `      ${spec.description}`]),
    '  svc help [<command>]',
    '      Show this, or the usage of one command or group (`svc help app secret`).',
    '',
    GLOBAL_NOTE,
  ];
}

/** A string flag's value (parseArgs keeps the last one of a flag given twice). */
export function stringValue(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A repeatable string flag's values, in order. */
export function stringValues(values: Values, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return typeof value === 'string' ? [value] : [];
}
