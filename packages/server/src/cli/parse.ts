import { Command, Option } from 'commander';

/** One flag of a command. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** The flag may be given more than once; its values are kept in order. */
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

/** The flags given, by their names in the spec (`owner-email`, not commander's `ownerEmail`). */
export type Values = Readonly<Record<string, string | readonly string[] | boolean | undefined>>;

/** A command line that names a command with well-formed arguments. */
export interface Invocation<C extends CommandSpec = CommandSpec> {
  readonly command: C;
  readonly json: boolean;
  readonly args: Readonly<Record<string, string>>;
  readonly values: Values;
}

export type ParsedLine<C extends CommandSpec> =
  | { kind: 'run'; invocation: Invocation<C> }
  | { kind: 'help'; lines: readonly string[] }
  | { kind: 'usage-error'; message: string; commands: readonly C[] };

const startsWith = (words: readonly string[], prefix: readonly string[]) => prefix.every((word, index) => words[index] === word);

/** The commands sharing the longest known prefix of `words`: what to show for `svc store` or `svc store frobnicate`. */
function commandsUnder<C extends CommandSpec>(words: readonly string[], specs: readonly C[]): readonly C[] {
  for (let length = words.length; length > 0; length -= 1) {
    const group = specs.filter((spec) => startsWith(spec.words, words.slice(0, length)));
    if (group.length > 0) return group;
  }
  return specs;
}

/** The words that lead to a commander command from the program: `['app', 'secret']`. */
function wordsOf(command: Command): string[] {
  const words: string[] = [];
  for (let current: Command | null = command; current?.parent; current = current.parent) words.unshift(current.name());
  return words;
}

/** The only single-dash flag; flags are otherwise `--long`. */
const SHORT_FLAGS = new Set(['-h']);

/** Stands for a value starting with one `-` while the line is parsed (argv cannot hold NUL). */
const dashPlaceholder = (index: number) => `\u0000${index}`;

/**
 * Words starting with a single `-` (but `-h`) are values, not flags: the last four characters of a
 * client secret may start with `-` (`svc app secret revoke <app> -x4Z`), and commander would take
 * them for unknown short flags. They are parsed as placeholders and put back afterwards.
 */
function protectDashValues(argv: readonly string[]): { line: string[]; restore: (value: string) => string } {
  const values: string[] = [];
  const line = argv.map((word) => {
    if (!/^-[^-]/.test(word) || SHORT_FLAGS.has(word)) return word;
    values.push(word);
    return dashPlaceholder(values.length - 1);
  });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 marks the placeholders (no argument can contain it)
  const restore = (text: string) => text.replace(/\u0000(\d+)/g, (placeholder, index: string) => values[Number(index)] ?? placeholder);
  return { line, restore };
}

/** The parsed line with every placeholder put back (in arguments, flag values and messages). */
function restored<C extends CommandSpec>(parsed: ParsedLine<C>, restore: (text: string) => string): ParsedLine<C> {
  if (parsed.kind === 'usage-error') return { ...parsed, message: restore(parsed.message) };
  if (parsed.kind !== 'run') return parsed;
  const restoreValue = (value: Values[string]): Values[string] =>
    typeof value === 'string' ? restore(value) : Array.isArray(value) ? value.map(restore) : value;
  const { invocation } = parsed;
  return {
    kind: 'run',
    invocation: {
      ...invocation,
      args: Object.fromEntries(Object.entries(invocation.args).map(([name, value]) => [name, restore(value)])),
      values: Object.fromEntries(Object.entries(invocation.values).map(([name, value]) => [name, restoreValue(value)])),
    },
  };
}

/** A repeatable flag's values in order: commander keeps only the last value of a plain flag. */
const collect = (value: string, previous: readonly string[] | undefined): readonly string[] => [...(previous ?? []), value];

function optionFor(name: string, spec: OptionSpec): Option {
  const option = new Option(spec.type === 'boolean' ? `--${name}` : `--${name} <value>`);
  if (spec.multiple) option.argParser(collect);
  if (spec.required) option.makeOptionMandatory();
  return option;
}

/** What the line came to; set by an action or by a refusal, read once `parse` is over. */
interface Outcome<C extends CommandSpec> {
  line?: ParsedLine<C>;
  readonly help: string[];
}

/**
 * Our wording for commander's refusals, with what the refusing command knows: the flag it did not
 * know, the argument missing or left over (`cmd.args` is the line's operands, then anything from the
 * first unknown flag on). Commander's own message (less its `error: ` prefix) for anything else.
 */
function refusalMessage(command: Command, code: string, commanderMessage: string): string {
  const [first = '', ...hints] = commanderMessage.split('\n');
  const plain = first.replace(/^error: /, '');
  switch (code) {
    case 'commander.unknownOption':
      return [`unknown flag ${command.args.find((word) => word.startsWith('-')) ?? ''}`, ...hints].join(' ');
    case 'commander.missingArgument':
      return `missing <${command.registeredArguments.find((argument, index) => argument.required && command.args[index] === undefined)?.name() ?? ''}>`;
    case 'commander.excessArguments':
      return `unexpected argument "${command.args[command.registeredArguments.length] ?? ''}"`;
    case 'commander.optionMissingArgument': {
      const flag = /--[\w-]+/.exec(first)?.[0];
      return flag ? `${flag} needs a value` : plain;
    }
    case 'commander.missingMandatoryOptionValue': {
      const values = command.opts();
      const missing = command.options.filter((option) => option.mandatory && values[option.attributeName()] === undefined);
      return `missing ${missing.map((option) => option.long).join(', ')}`;
    }
    default:
      return plain;
  }
}

/**
 * The commander program for the specs. Each command records what the line came to in `outcome`:
 * its action (a complete command line), its help, or its refusal, which commander reports through
 * `exitOverride` (so it never exits the process) with nothing written (`outputError` is silent).
 */
function programFor<C extends CommandSpec>(specs: readonly C[], outcome: Outcome<C>): Command {
  const program = new Command('svc')
    .helpCommand(false)
    .option('--json', 'one JSON document on stdout')
    .configureOutput({
      writeOut: (text) => outcome.help.push(...text.replace(/\n$/, '').split('\n')),
      writeErr: () => {},
      outputError: () => {},
    })
    .configureHelp({ formatHelp: (command) => `${usageText(commandsUnder(wordsOf(command), specs)).join('\n')}\n` });
  const settle = (command: Command, spec?: C) =>
    command.exitOverride((error) => {
      outcome.line ??=
        error.exitCode === 0
          ? { kind: 'help', lines: outcome.help }
          : {
              kind: 'usage-error',
              message: refusalMessage(command, error.code, error.message),
              commands: spec ? [spec] : commandsUnder(wordsOf(command), specs),
            };
      throw error;
    });

  /** `svc`, `svc store`, `svc app secret`: complete only with a command after them. */
  const group = (command: Command) =>
    settle(command)
      .allowExcessArguments(true)
      .action(() => {
        const words = wordsOf(command);
        const [next] = command.args;
        const message =
          next !== undefined
            ? `unknown command "${[...words, next].join(' ')}"`
            : words.length === 0
              ? 'no command given'
              : `incomplete command "${words.join(' ')}"`;
        outcome.line = { kind: 'usage-error', message, commands: commandsUnder(words, specs) };
      });
  group(program);

  const commandAt = (words: readonly string[]): Command =>
    words.reduce((parent, word) => parent.commands.find((command) => command.name() === word) ?? group(parent.command(word)), program);

  for (const spec of specs) {
    const command = settle(commandAt(spec.words.slice(0, -1)).command(spec.words.at(-1) as string), spec).allowExcessArguments(false);
    for (const name of spec.args) command.argument(`<${name}>`);
    const options = Object.entries(spec.options).map(([name, optionSpec]) => {
      const option = optionFor(name, optionSpec);
      command.addOption(option);
      return [name, option] as const;
    });
    command.action(() => {
      const values = command.opts();
      outcome.line = {
        kind: 'run',
        invocation: {
          command: spec,
          json: command.optsWithGlobals().json === true,
          args: Object.fromEntries(spec.args.map((name, index) => [name, command.args[index] as string])),
          values: Object.fromEntries(options.map(([name, option]) => [name, values[option.attributeName()] as Values[string]])),
        },
      };
    });
  }

  settle(program.command('help'))
    .argument('[command...]')
    .action((words: string[]) => {
      let target = program;
      for (const word of words) {
        const child = target.commands.find((command) => command.name() === word);
        if (!child) break;
        target = child;
      }
      target.outputHelp();
      outcome.line = { kind: 'help', lines: outcome.help };
    });
  return program;
}

/**
 * Reads a command line with commander: `svc help [<command>]`, `--help`/`-h` after any command or
 * group, `--json` anywhere on the line, each command's own flags after its words.
 */
export function parseCommandLine<C extends CommandSpec>(argv: readonly string[], specs: readonly C[]): ParsedLine<C> {
  const { line, restore } = protectDashValues(argv);
  const outcome: Outcome<C> = { help: [] };
  try {
    programFor(specs, outcome).parse(line, { from: 'user' });
  } catch (error) {
    if (!outcome.line) throw error;
  }
  if (!outcome.line) throw new Error(`svc ${argv.join(' ')}: the line came to nothing`);
  return restored(outcome.line, restore);
}

function optionUsage(name: string, option: OptionSpec): string {
  const flag = option.type === 'boolean' ? `--${name}` : `--${name} ${option.placeholder ?? `<${name}>`}`;
  const repeated = option.multiple ? `${flag}...` : flag;
  return option.required ? repeated : `[${repeated}]`;
}

/** `svc installation list [--store <storeId>] [--app <appId>]`, built from the spec that commander parses by, so they never drift apart. */
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

/** A string flag's value (the last one of a flag given twice). */
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
