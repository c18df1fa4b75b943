import type { Instance } from './fleet';

/**
 * What an operator sees of the fleet during a fault: each instance's `/readyz`, the metrics that
 * bear on it, and the log lines that say something (warnings and errors, the leader's changes, a
 * replica's), each said once with how many times it came.
 */

/** `instance-1 /readyz 200 replica-1 unavailable`. */
export async function readinessOf(instance: Instance): Promise<string> {
  try {
    const response = await fetch(`${instance.server.base}/readyz`, { signal: AbortSignal.timeout(5000) });
    const body = (await response.json()) as {
      database?: { replicas?: { name: string; state: string; lag_ms: number | null }[] };
      error?: { message?: string };
    };
    const replicas = (body.database?.replicas ?? []).map(
      (replica) => `${replica.name} ${replica.state}${replica.lag_ms === null ? '' : ` (${replica.lag_ms} ms behind)`}`,
    );
    const retry = response.headers.get('retry-after');
    return `${instance.name} /readyz ${response.status}${retry ? ` (Retry-After ${retry})` : ''}${replicas.length ? `: ${replicas.join(', ')}` : ''}${body.error?.message ? `: ${body.error.message}` : ''}`;
  } catch (error) {
    return `${instance.name} /readyz no answer (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** The samples of the named metrics (`svc_db_replica_serving{replica="replica-1"} 0`), without help and type lines. */
export async function metricsOf(instance: Instance, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  try {
    const text = await (await fetch(instance.metricsUrl, { signal: AbortSignal.timeout(5000) })).text();
    return text
      .split('\n')
      .filter((line) => !line.startsWith('#') && names.some((name) => line.startsWith(name)))
      .map((line) => `${instance.name} ${line}`);
  } catch (error) {
    return [`${instance.name} /metrics no answer (${error instanceof Error ? error.message : String(error)})`];
  }
}

/** pino's levels: 40 warn, 50 error. */
const WARN = 40;
/** Info lines an operator watches for during these faults. */
const TOLD = /leader|replica|listening for webhook work|migrat/i;

/** Where each instance's log was read up to. */
export class LogCursor {
  private readonly offsets = new Map<Instance, number>();

  /** From now on: what came before is not this fault's. */
  mark(instances: readonly Instance[]): void {
    for (const instance of instances) this.offsets.set(instance, instance.server.log?.().length ?? 0);
  }

  /** The telling lines each instance logged since its mark, each message once with its count. */
  linesSince(instances: readonly Instance[]): string[] {
    const counts = new Map<string, number>();
    for (const instance of instances) {
      const text = instance.server.log?.() ?? '';
      for (const line of text.slice(this.offsets.get(instance) ?? 0).split('\n')) {
        const message = tellingMessage(line);
        if (message === undefined) continue;
        const key = `${instance.name}: ${message}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      this.offsets.set(instance, text.length);
    }
    return [...counts].map(([line, count]) => (count > 1 ? `${line} (× ${count})` : line));
  }
}

/** A JSON log line's message when it is a warning, an error or one of the told info lines. */
export function tellingMessage(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string };
    if (typeof entry.msg !== 'string') return undefined;
    return (entry.level ?? 0) >= WARN || TOLD.test(entry.msg) ? entry.msg : undefined;
  } catch {
    return undefined;
  }
}
