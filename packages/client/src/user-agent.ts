import { SDK_VERSION } from './version';

/** Who is calling, named before the SDK in the `User-Agent` (like stripe-node's `appInfo`): `name/version (url)`. */
export interface AppInfo {
  name: string;
  version?: string;
  url?: string;
}

/** The globals each runtime is told apart by; every one is optional (a bundle may run anywhere). */
interface RuntimeGlobals {
  process?: { versions?: { node?: string; bun?: string } };
  Deno?: { version?: { deno?: string } };
  EdgeRuntime?: unknown;
  navigator?: { userAgent?: string };
  document?: unknown;
  WorkerGlobalScope?: unknown;
}

/** The runtime as the `User-Agent` names it, and whether it is a browser (or a browser's worker). */
export interface Runtime {
  token: string;
  browser: boolean;
}

export function detectRuntime(scope: RuntimeGlobals = globalThis as RuntimeGlobals): Runtime {
  if (scope.Deno?.version?.deno) return { token: `deno/${scope.Deno.version.deno}`, browser: false };
  if (scope.process?.versions?.bun) return { token: `bun/${scope.process.versions.bun}`, browser: false };
  if (scope.process?.versions?.node) return { token: `node/${scope.process.versions.node}`, browser: false };
  if (typeof scope.EdgeRuntime === 'string') return { token: 'vercel-edge', browser: false };
  if (scope.navigator?.userAgent === 'Cloudflare-Workers') return { token: 'workerd', browser: false };
  if (scope.document !== undefined || scope.WorkerGlobalScope !== undefined) return { token: 'browser', browser: true };
  return { token: 'unknown', browser: false };
}

const appToken = (app: AppInfo): string => `${app.name}${app.version ? `/${app.version}` : ''}${app.url ? ` (${app.url})` : ''}`;

/**
 * The header that names the caller: `User-Agent: <app> svc-sdk/<version> <runtime>/<version>`. A
 * browser does not let a page set `User-Agent` (it sends its own), so there the same value goes in
 * `X-Client-User-Agent`, which the service's CORS allow-list lets through a preflight.
 */
export function userAgentHeader(app: AppInfo | undefined, runtime: Runtime = detectRuntime()): [name: string, value: string] {
  const value = [app ? appToken(app) : undefined, `svc-sdk/${SDK_VERSION}`, runtime.token].filter(Boolean).join(' ');
  return [runtime.browser ? 'X-Client-User-Agent' : 'User-Agent', value];
}
