import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import { inSeries, underPath } from '../../src/http/series';

/** An app whose one layer is the series; the answer lists what ran and how the series ended. */
function appOf(handlers: RequestHandler[]) {
  const app = express();
  app.use((_req, res, next) => {
    res.locals.ran = [];
    next();
  });
  app.use(inSeries(handlers));
  app.use((_req, res) => void res.json({ ran: res.locals.ran, ended: 'next' }));
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => void res.status(500).json({ ran: res.locals.ran, ended: error.message }));
  return app;
}

const mark =
  (name: string): RequestHandler =>
  (_req, res, next) => {
    (res.locals.ran as string[]).push(name);
    next();
  };

describe('inSeries', () => {
  it('runs the handlers in order, then goes on', async () => {
    expect((await request(appOf([mark('a'), mark('b'), mark('c')])).get('/')).body).toEqual({ ran: ['a', 'b', 'c'], ended: 'next' });
    expect((await request(appOf([])).get('/')).body).toEqual({ ran: [], ended: 'next' });
  });

  it('skips the rest on an error passed to next, thrown, or rejected', async () => {
    const passed: RequestHandler = (_req, _res, next) => next(new Error('passed'));
    const thrown: RequestHandler = () => {
      throw new Error('thrown');
    };
    const rejected: RequestHandler = async () => {
      throw new Error('rejected');
    };
    for (const [failing, message] of [
      [passed, 'passed'],
      [thrown, 'thrown'],
      [rejected, 'rejected'],
    ] as const) {
      const response = await request(appOf([mark('a'), failing, mark('b')])).get('/');
      expect({ status: response.status, body: response.body }).toEqual({ status: 500, body: { ran: ['a'], ended: message } });
    }
  });

  it('lets a handler answer and stop', async () => {
    const answer: RequestHandler = (_req, res) => void res.status(201).json({ answered: true });
    const response = await request(appOf([mark('a'), answer, mark('b')])).get('/');
    expect({ status: response.status, body: response.body }).toEqual({ status: 201, body: { answered: true } });
  });
});

describe('underPath', () => {
  it('runs the handler for the prefix and the paths below it only', async () => {
    const app = appOf([underPath('/oauth', mark('oauth'))]);
    for (const [path, ran] of [
      ['/oauth', ['oauth']],
      ['/oauth/token', ['oauth']],
      ['/oauthx', []],
      ['/stores/oauth', []],
      ['/', []],
    ] as const) {
      expect({ path, ran: (await request(app).get(path)).body.ran }).toEqual({ path, ran });
    }
  });
});
