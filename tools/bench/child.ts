import fs from 'node:fs';
import type { Server } from 'node:http';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import type { ChildMessage, ParentMessage } from './protocol';

/** Sends a message to the bench; a child started without an IPC channel is a usage error. */
export function tellParent(message: ChildMessage): void {
  if (!process.send) throw new Error('tools/bench servers are started by tools/bench/run.ts (fork, with IPC)');
  process.send(message);
}

export const portOf = (server: Server): number => (server.address() as AddressInfo).port;

/** Starts listening on a free port of the loopback interface. */
export function listen(app: { listen(port: number, host: string, done: () => void): Server }): Promise<Server> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/**
 * Answers the bench's messages: CPU profiles of the measured runs only (the inspector's sampling
 * profiler, started and stopped on request, so seeding and warm-up stay out of them), fresh tokens,
 * and a clean stop. Exits when the bench goes away.
 */
export function serveBench(server: Server, options: { newToken?: () => Promise<string>; close?: () => Promise<void> } = {}): void {
  let session: Session | undefined;
  const stop = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await options.close?.();
    process.exit(0);
  };
  const handle = async (message: ParentMessage): Promise<void> => {
    switch (message.type) {
      case 'token':
        if (!options.newToken) throw new Error('This server issues no tokens');
        tellParent({ type: 'token', accessToken: await options.newToken() });
        return;
      case 'cpu':
        tellParent({ type: 'cpu', ...process.cpuUsage() });
        return;
      case 'profile-start':
        session = new Session();
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 500 });
        await session.post('Profiler.start');
        return;
      case 'profile-stop': {
        if (!session) throw new Error('No profile was started');
        const { profile } = await session.post('Profiler.stop');
        session.disconnect();
        session = undefined;
        fs.writeFileSync(message.file, JSON.stringify(profile));
        tellParent({ type: 'profiled', file: message.file });
        return;
      }
      case 'stop':
        await stop();
        return;
    }
  };
  process.on('message', (message: ParentMessage) => {
    handle(message).catch((error: unknown) => tellParent({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
  });
  process.on('disconnect', () => void stop());
}

/** Reports a failure to start, then exits. */
export function failStart(error: unknown): never {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (process.send) process.send({ type: 'failed', message } satisfies ChildMessage);
  else console.error(message);
  process.exit(1);
}
