#!/usr/bin/env node
/**
 * `pnpm start`: builds when the sources changed since the last build (tools/dev/build.js), then
 * runs the built server with the demo store (`SEED_DEMO=true` unless set) and stops as one command:
 * - a signal that reaches this launcher (pnpm forwards the terminal's Ctrl-C, a supervisor sends
 *   SIGTERM) is passed to the server, which takes copies that arrive together as one stop
 *   (runtime/shutdown.ts), so Ctrl-C drains and exits 0, and a second Ctrl-C later exits at once;
 * - when a process of the start command ends (a SIGTERM to `npx`'s process, which does not pass it
 *   to pnpm), the server is stopped too, so nothing of the command is left holding the port;
 * - it exits with the server's exit code, after one line saying it.
 * Plain JavaScript, run by node: nothing of the server's development tools is loaded on the way.
 */
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const { build, buildIsCurrent } = require('./build');
const { startCommandChain, watchChain } = require('./start-command');

const repositoryRoot = path.resolve(__dirname, '..', '..');
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'];

const say = (line) => process.stderr.write(`${line}\n`);

async function main() {
  const building = new AbortController();
  let server;
  const stop = (signal) => {
    if (server) server.kill(signal);
    else building.abort();
  };
  for (const signal of FORWARDED) process.on(signal, () => stop(signal));
  const watch = watchChain(startCommandChain(), () => {
    say('Server     the start command has ended: stopping');
    stop('SIGTERM');
  });

  if (!buildIsCurrent(repositoryRoot)) {
    say('Build      the sources changed since the last build (or there is none): building …');
    try {
      await build({ root: repositoryRoot, signal: building.signal });
    } catch (error) {
      if (building.signal.aborted) return 130;
      throw error;
    }
  }

  server = spawn(process.execPath, ['--enable-source-maps', path.join('packages', 'server', 'dist', 'main.js')], {
    cwd: repositoryRoot,
    stdio: 'inherit',
    env: { ...process.env, SEED_DEMO: process.env.SEED_DEMO ?? 'true' },
  });
  const [code, signal] = await new Promise((resolve) => server.once('exit', (...outcome) => resolve(outcome)));
  watch.stop();
  const exitCode = code ?? 128 + (os.constants.signals[signal] ?? 0);
  say(`Server     stopped (exit code ${exitCode}${signal ? `, ${signal}` : ''})`);
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    say(`start: ${error.message}`);
    process.exit(1);
  },
);
