import fs from 'node:fs';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Config } from './core/config';
import { ApiError } from './core/errors';
import { BODY_BYTES } from './core/limits';
import { bundledSpecPath, docsSiteDir } from './core/paths';
import { dashboardRouter } from './dashboard/router';
import { handlers as generatedHandlers } from './generated/registry';
import { apiVersionSelection } from './http/api-version';
import { clientAuthenticationFirst } from './http/client-first';
import { corsPolicy } from './http/cors';
import { requireDocumentedStatuses } from './http/documented-statuses';
import { type ErrorSurface, errorBody, toApiError } from './http/error-mapper';
import { formBody, parseFormEncoded } from './http/form-encoding';
import type { Handlers } from './http/handler';
import { isReplayedError, REPLAYED_HEADER } from './http/idempotency';
import { operationEntryOf } from './http/matched-operation';
import { refuseNulCharacters } from './http/nul-guard';
import { errorHeaders } from './http/protocol-headers';
import { requestContext, requestIdOf } from './http/request-context';
import { type Logger, noteErrorAnswer, requestIds, requestLog, silentLogger } from './http/request-log';
import { requestMetrics } from './http/request-metrics';
import { operationRouter } from './http/router';
import { securityHeaders } from './http/security-headers';
import { inSeries, underPath } from './http/series';
import { specDocument } from './http/spec-document';
import type { Services } from './services/container';

export { docsSiteDir };

export interface AppOptions {
  /**
   * Without `trustProxy`, no proxy is trusted (the client address is the connection's peer).
   * HSTS is sent only when `environment` is `production`; `corsOrigins` (none when left out) may
   * call the store API from a browser (http/cors).
   */
  config: Pick<Config, 'validateResponses' | 'exposeInternalErrors'> & Partial<Pick<Config, 'trustProxy' | 'environment' | 'corsOrigins'>>;
  services: Services;
  handlers?: Handlers;
  /** Where each request's line goes (http/request-log); silent when not given. */
  logger?: Logger;
}

function loadSpec(): object {
  return JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as object;
}

const surfaceOf = (req: Request): ErrorSurface => (req.path.startsWith('/oauth') ? 'oauth' : 'store');

function docsSite(): express.RequestHandler {
  const router = express.Router();
  router.use(express.static(docsSiteDir, { index: 'index.html', fallthrough: true }));
  const built = () => fs.existsSync(`${docsSiteDir}/index.html`);
  // The page routes by fragment (`/docs/#/paging`) so that it also works from disk; a section asked
  // for as a path (a link from elsewhere, a guessed address) is sent there. A missing file stays a 404.
  router.get(/^\/.*[^/]\/?$/, (req, res, next) => {
    const section = req.path.replace(/\/$/, '');
    if (/\.[a-z0-9]+$/i.test(section) || !built()) return next();
    res.redirect(302, `${req.baseUrl}/#${section}`);
  });
  router.use((_req, res) => {
    const answer = built() ? 'No such file in the docs site.' : 'The docs site is not built yet: run `pnpm run docs`.';
    res.status(404).type('text').send(answer);
  });
  return router;
}

/** The Express app: request id, body limits, spec validation, the operation router, one error mapper. */
export function createApp({ config, services, handlers = generatedHandlers, logger = silentLogger() }: AppOptions): Express {
  const app = express();
  app.set('query parser', parseFormEncoded);
  app.set('etag', false);
  app.disable('x-powered-by');
  // req.ip and req.secure believe X-Forwarded-For and X-Forwarded-Proto only from these peers.
  app.set('trust proxy', config.trustProxy ?? false);

  app.use(requestContext(services.clock, services.engine.reads));
  app.use(requestLog(logger));
  if (services.metrics.enabled) app.use(requestMetrics(services.metrics));
  app.use(securityHeaders({ hsts: config.environment === 'production', docsSiteDir }));
  // Before validation, which answers the undeclared OPTIONS with 405.
  app.use(corsPolicy({ origins: config.corsOrigins ?? [], logger }));
  if (config.validateResponses) app.use(requireDocumentedStatuses());
  // Before everything that may answer for an operation, so that every answer names its date version.
  app.use(apiVersionSelection(services));
  app.use('/docs', docsSite());
  // llms.txt is looked for at the root (llmstxt.org); it is the docs site's, beside its pages.
  app.get('/llms.txt', (_req: Request, res: Response) => res.redirect(301, '/docs/llms.txt'));
  app.get('/openapi.json', specDocument());
  app.use('/dashboard', dashboardRouter(services));
  // Body parsing, the NUL guard and spec validation run as one layer (see inSeries). The OAuth
  // endpoints that authenticate the client judge it once the body is read, before anything in it (RFC 6749 §5.2).
  app.use(
    inSeries([
      express.json({ limit: BODY_BYTES, type: ['application/json', 'application/*+json'] }),
      underPath('/oauth', formBody(BODY_BYTES)),
      clientAuthenticationFirst(services),
      refuseNulCharacters,
      ...OpenApiValidator.middleware({
        apiSpec: loadSpec() as never,
        validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, removeAdditional: false, allErrors: true },
        validateResponses: config.validateResponses ? { removeAdditional: false, allErrors: true } : false,
        validateSecurity: false,
        fileUploader: false, // no operation takes multipart bodies: no multipart middleware on every request
        validateFormats: true,
        validateApiSpec: false,
        ignoreUndocumented: false,
        ignorePaths: /^\/docs(\/|$)/,
      }),
    ]),
  );
  app.use(operationRouter(handlers, services));
  app.use((_req: Request, _res: Response, next: NextFunction) => next(new ApiError('NOT_FOUND', 'No such endpoint.')));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const surface = surfaceOf(req);
    const apiError = toApiError(error, surface, config.exposeInternalErrors, {
      query: req.query as Record<string, unknown>,
      filters: operationEntryOf(req)?.filters ?? [],
      method: req.method,
      path: req.path,
    });
    const requestId = requestIdOf(res);
    noteErrorAnswer(res, apiError.code, error);
    if (res.headersSent) return void res.end();
    if (surface === 'oauth') res.set('Cache-Control', 'no-store'); // RFC 6749 §5.2: token errors are not cached
    res.status(apiError.status);
    const headers = errorHeaders(apiError, req.headers);
    if (isReplayedError(error)) headers[REPLAYED_HEADER] = 'true';
    for (const [name, value] of Object.entries(headers)) {
      try {
        res.set(name, value);
      } catch (headerError) {
        logger.warn({ ...requestIds(res), err: headerError, header: name, err_code: apiError.code }, 'dropped a header of an error answer'); // never lose the error itself
      }
    }
    res.json(errorBody(apiError, requestId));
  });
  return app;
}
