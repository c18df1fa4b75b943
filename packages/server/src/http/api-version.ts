import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { API_VERSION_HEADER, type ApiVersionEntry, unsupportedVersion, VERSION_HEADER_NAMES, versionHeaders } from '../core/api-versions';
import { METADATA_PATH } from '../oauth/metadata';
import type { Services } from '../services/container';

/**
 * How the version of an answer was chosen: by the request's header (final), or provisionally (the
 * current version) until the caller's app, and so its pin, is known.
 */
interface ServedVersion {
  readonly entry: ApiVersionEntry;
  readonly fromHeader: boolean;
}

const servedOf = (res: Response): ServedVersion | undefined => res.locals.apiVersion as ServedVersion | undefined;

/** Each version's headers, made once (every answer carries them). */
const headersOfVersion = new WeakMap<ApiVersionEntry, [string, string][]>();

function headersOf(entry: ApiVersionEntry): [string, string][] {
  let headers = headersOfVersion.get(entry);
  if (!headers) {
    headers = Object.entries(versionHeaders(entry));
    headersOfVersion.set(entry, headers);
  }
  return headers;
}

function serve(res: Response, served: ServedVersion): void {
  const previous = servedOf(res);
  res.locals.apiVersion = served;
  if (previous?.entry === served.entry) return;
  if (previous) for (const name of VERSION_HEADER_NAMES) res.removeHeader(name);
  for (const [name, value] of headersOf(served.entry)) res.setHeader(name, value);
}

/** The paths whose answers carry a date version: the interface (store API, OAuth) and the probes. */
const isVersioned = (path: string): boolean => path.startsWith('/stores/') || path.startsWith('/oauth/') || path === '/oauth';
/** Answered under the current version whatever the request names: the probes, and the RFC 8414 metadata (a standard document). */
const isProbe = (path: string): boolean => path === '/livez' || path === '/readyz' || path === METADATA_PATH;

/**
 * The first step of every request to the interface (docs/decisions/0055-date-versions.md):
 * the `API-Version` header's version, refused with 400 UNSUPPORTED_VERSION
 * before anything else when it is no version or a retired one (what the request means depends on
 * it, so nothing else is judged first); without the header, the current version until
 * {@link settleVersion} knows the app. The answer names its version from here on, errors included.
 * The probes, which no app calls, and the OAuth metadata document, whose form RFC 8414 fixes, always
 * answer under the current version and ignore the header.
 */
export function apiVersionSelection(services: Pick<Services, 'apiVersions' | 'clock'>): RequestHandler {
  const { apiVersions: registry, clock } = services;
  return (req: Request, res: Response, next: NextFunction) => {
    if (isProbe(req.path)) {
      serve(res, { entry: registry.current, fromHeader: false });
      return next();
    }
    if (!isVersioned(req.path)) return next();
    const asked = req.headers[API_VERSION_HEADER.toLowerCase()];
    if (asked === undefined) {
      serve(res, { entry: registry.current, fromHeader: false });
      return next();
    }
    const text = Array.isArray(asked) ? asked.join(', ') : asked;
    const entry = registry.find(text);
    const now = clock.now();
    if (!entry || registry.stateOf(entry, now) === 'retired') {
      serve(res, { entry: registry.current, fromHeader: false });
      return next(unsupportedVersion(registry, now, text));
    }
    serve(res, { entry, fromHeader: true });
    next();
  };
}

/**
 * Once the caller is known: a request without the header is served under the app's pinned version
 * (the current one stays when the app has none), refused when the pin is retired or unknown; and a
 * store API call is noted for `svc api-version usage` under the installation.
 */
export function settleVersion(
  services: Services,
  res: Response,
  caller: { readonly pinned: string | null; readonly installationId?: string | undefined },
): void {
  const registry = services.apiVersions;
  let served = servedOf(res) ?? { entry: registry.current, fromHeader: false };
  if (!served.fromHeader && caller.pinned !== null && caller.pinned !== served.entry.version) {
    const entry = registry.find(caller.pinned);
    const now = services.clock.now();
    if (!entry || registry.stateOf(entry, now) === 'retired') throw unsupportedVersion(registry, now, caller.pinned, true);
    served = { entry, fromHeader: false };
    serve(res, served);
  }
  if (caller.installationId !== undefined) services.versionUse.note(caller.installationId, served.entry.version);
}

/** The version the answer is served under (the current one for requests no selection ran for). */
export const servedVersionOf = (res: Response, services: Pick<Services, 'apiVersions'>): string =>
  (servedOf(res)?.entry ?? services.apiVersions.current).version;
