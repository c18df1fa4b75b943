import type { Knex } from 'knex';

/** The levels knex's complaints are written at. */
export interface DatabaseLog {
  warn(message: string): void;
  debug(message: string): void;
}

/** Without a logger: warnings to standard error, whose readers are people; standard output may carry a command's answer. */
export const stderrLog: DatabaseLog = {
  warn: (message) => process.stderr.write(`${message}\n`),
  debug: () => undefined,
};

/**
 * knex writes its complaints with `console.log` unless given a logger, which would put plain text
 * among the JSON lines on standard output. "Acquire connection error" is the same failure that the
 * caller receives and logs itself (the start's wait for the database, a request's 503), with a
 * stack: it is kept at debug so that each failure is one line, not three.
 */
export function knexLogger(log: DatabaseLog): Knex.Config['log'] {
  const text = (message: unknown) => (typeof message === 'string' ? message : JSON.stringify(message));
  return {
    warn: (message: unknown) => (text(message).startsWith('Acquire connection error') ? log.debug(text(message)) : log.warn(text(message))),
    error: (message: unknown) => log.warn(text(message)),
    deprecate: (method: string, alternative: string) => log.warn(`knex: ${method} is deprecated; use ${alternative}`),
    debug: (message: unknown) => log.debug(text(message)),
  };
}
