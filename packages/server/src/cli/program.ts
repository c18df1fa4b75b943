import { type Argument, Command, type CommanderError, type Option } from 'commander';
import { NOUNS } from './commands';
import type { Actions, CommandRole, Input, Run, SchemaUse } from './context';
import { protectDashValues, unprotect } from './dash-values';
import { leavesOf, usageText, wordsOf } from './usage';

/** A command line that names a command with well-formed arguments: what to run and how. */
export interface Invocation {
  readonly use: SchemaUse;
  readonly role: CommandRole;
  readonly run: Run<unknown, readonly string[]>;
  readonly input: Input<unknown, readonly string[]>;
  readonly json: boolean;
}

export type ParsedLine =
  | { kind: 'run'; invocation: Invocation }
  | { kind: 'help'; lines: readonly string[] }
  | { kind: 'usage-error'; message: string; commands: readonly Command[] };

/** What the line came to; set by an action or by a refusal, read once `parse` is over. */
interface Outcome {
  line?: ParsedLine;
  readonly help: string[];
}

const refusal = (message: string, commands: readonly Command[]): ParsedLine => ({ kind: 'usage-error', message: unprotect(message), commands });

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

const either = (choices: readonly string[]): string => [choices.slice(0, -1).join(', '), choices.at(-1)].filter(Boolean).join(' or ');

/**
 * Every value reaches its parser as typed (not as marked by `protectDashValues`), and a value its
 * parser refuses becomes our message naming the flag or argument (`--days must be ...`), which
 * commander's own wording (`option '--days <N>' argument '0' is invalid.`) would bury.
 */
function readValuesOf(target: Option | Argument, subject: string, command: Command, outcome: Outcome): void {
  const parse = target.parseArg;
  target.argParser((raw: string, previous: unknown) => {
    const value = unprotect(raw);
    try {
      return parse ? parse(value, previous) : value;
    } catch (error) {
      if ((error as CommanderError).code !== 'commander.invalidArgument') throw error;
      const choices = 'argChoices' in target ? target.argChoices : undefined;
      const reason = choices ? `must be ${either(choices)}, not "${value}"` : (error as Error).message;
      outcome.line ??= refusal(`${subject} ${reason}`, [command]);
      throw error;
    }
  });
}

/** `svc`, `svc store`, `svc app secret`: complete only with a command after them. */
function asGroup(command: Command, outcome: Outcome): void {
  command.allowExcessArguments(true).action(() => {
    const words = wordsOf(command);
    const [next] = command.args;
    const message =
      next !== undefined
        ? `unknown command "${[...words, next].join(' ')}"`
        : words.length === 0
          ? 'no command given'
          : `incomplete command "${words.join(' ')}"`;
    outcome.line = refusal(message, leavesOf(command));
  });
}

/**
 * Makes a command and those under it answer into `outcome`: help formatted by `usageText` and
 * written there, refusals reported through `exitOverride` (so commander never exits the process)
 * with nothing written (`outputError` is silent).
 */
function answerInto(command: Command, outcome: Outcome): void {
  const isGroup = command.commands.length > 0;
  command
    .helpCommand(false)
    .configureOutput({
      writeOut: (text) => outcome.help.push(...text.replace(/\n$/, '').split('\n')),
      writeErr: () => {},
      outputError: () => {},
    })
    .configureHelp({ formatHelp: (shown) => `${usageText(leavesOf(shown)).join('\n')}\n` })
    .exitOverride((error) => {
      outcome.line ??=
        error.exitCode === 0 ? { kind: 'help', lines: outcome.help } : refusal(refusalMessage(command, error.code, error.message), leavesOf(command));
      throw error;
    });
  for (const option of command.options) if (option.required) readValuesOf(option, option.long ?? option.flags, command, outcome);
  for (const argument of command.registeredArguments) if (!argument.variadic) readValuesOf(argument, `<${argument.name()}>`, command, outcome);
  if (isGroup) asGroup(command, outcome);
  for (const child of command.commands) answerInto(child, outcome);
}

/** The actions that record, for each way a command uses the schema, the command the line named. */
function recordingActions(outcome: Outcome): Actions {
  const recording =
    (use: SchemaUse, role: CommandRole = 'command') =>
    <Options, Args extends readonly string[]>(run: Run<Options, Args>) =>
    (...params: unknown[]) => {
      const command = params.at(-1) as Command;
      outcome.line = {
        kind: 'run',
        invocation: {
          use,
          role,
          run: run as Run<unknown, readonly string[]>,
          input: { options: command.opts(), args: command.processedArgs as string[] },
          json: command.optsWithGlobals().json === true,
        },
      };
    };
  return { writes: recording('writes'), reads: recording('reads'), migrates: recording('migrates'), delivers: recording('writes', 'worker') };
}

/** `svc help [<command>]`: commander's own help command takes one word, and `svc help app secret` names a group two deep. */
function helpCommand(program: Command, outcome: Outcome): Command {
  return new Command('help').argument('[command...]').action((words: string[]) => {
    let target = program;
    for (const word of words) {
      const child = target.commands.find((command) => command.name() === word);
      if (!child) break;
      target = child;
    }
    target.outputHelp();
    outcome.line = { kind: 'help', lines: outcome.help };
  });
}

function programFor(outcome: Outcome): Command {
  const actions = recordingActions(outcome);
  const program = new Command('svc').option('--json', 'one JSON document on stdout');
  for (const noun of NOUNS) program.addCommand(noun(actions));
  program.addCommand(helpCommand(program, outcome));
  answerInto(program, outcome);
  return program;
}

/**
 * Reads a command line with commander: `svc help [<command>]`, `--help`/`-h` after any command or
 * group, `--json` anywhere on the line, each command's own flags after its words.
 */
export function parseCommandLine(argv: readonly string[]): ParsedLine {
  const outcome: Outcome = { help: [] };
  try {
    programFor(outcome).parse(protectDashValues(argv), { from: 'user' });
  } catch (error) {
    if (!outcome.line) throw error;
  }
  if (!outcome.line) throw new Error(`svc ${argv.join(' ')}: the line came to nothing`);
  return outcome.line;
}
