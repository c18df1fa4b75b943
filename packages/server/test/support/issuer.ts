import type { Express } from 'express';
import { createApp } from '../../src/app';
import type { Services } from '../../src/services/container';
import type { SuiteHarness } from './harness';
import { type Listening, listen } from './listen';

/** The harness's database and clock served on a real port whose origin is the issuer (`PUBLIC_URL`). */
export interface IssuerServer {
  service: Listening;
  /** The app behind the port (browser steps go through it, so that their redirects name this issuer). */
  app: Express;
  services: Services;
  /** `http://127.0.0.1:<port>`: the metadata's issuer and the `iss` of authorization responses. */
  issuer: string;
}

/**
 * Listens first, then serves the harness's services with the origin it got as their issuer: a
 * client configured from the metadata URL finds the issuer it asked for (RFC 8414 §3.3). Closed with the suite.
 */
export async function listenAsIssuer(h: SuiteHarness): Promise<IssuerServer> {
  let app: Express | undefined;
  const service = await listen((req, res) => (app as Express)(req, res));
  h.atEnd(() => service.close());
  const services: Services = { ...h.services, issuer: service.origin };
  app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });
  return { service, app, services, issuer: service.origin };
}
