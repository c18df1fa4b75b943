/** How `until` asks again, and for how long. */
export interface Polling {
  /** What is awaited, for the message when the time is up. */
  readonly what?: string;
  /** How long to ask before giving up; unbounded when left out (the caller's own timeout ends it). */
  readonly timeoutMs?: number;
  /** The pause between two askings (50 ms unless given). */
  readonly everyMs?: number;
  /** A condition that throws ends the wait with its error, rather than counting as not yet. */
  readonly rethrow?: boolean;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Asks `condition` again, every `everyMs`, until it is true: the one poller of the tests, the
 * benches and the drills. A condition that throws counts as not yet (a server that is not listening
 * yet refuses the probe) unless `rethrow`; when `timeoutMs` passes first, this throws, naming what
 * it waited for and the condition's last error.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  { what = 'the condition holds', timeoutMs, everyMs = 50, rethrow = false }: Polling = {},
): Promise<void> {
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (error) {
      if (rethrow) throw error;
      lastError = error;
    }
    if (deadline !== undefined && Date.now() > deadline) {
      throw new Error(`Timed out waiting until ${what}${lastError === undefined ? '' : ` (last: ${messageOf(lastError)})`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
