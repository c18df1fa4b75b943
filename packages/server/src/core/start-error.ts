/**
 * A start refused for a reason the operator must act on (a port taken, a data directory another
 * server holds): said in one line, without a stack (main.ts).
 */
export class StartError extends Error {
  override readonly name = 'StartError';
}
