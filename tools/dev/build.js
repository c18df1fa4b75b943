#!/usr/bin/env node
/**
 * `pnpm build`: the docs site and the SDK reference (`pnpm run docs`), then the server and CLI as
 * JavaScript (tsup), and a note of what they were built from. `pnpm start` builds only when that
 * note no longer matches the sources (buildIsCurrent), so a restart with nothing changed starts at
 * once. Plain JavaScript: it runs before anything is compiled, with no TypeScript loader.
 */
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const repositoryRoot = path.resolve(__dirname, '..', '..');

/**
 * What the build reads, as paths from the repository root: the spec, the packages' sources, the
 * generators, the guides and the workspace's files. Tests and what the build writes are not inputs.
 * Wider than strictly needed (a change to the client's README rebuilds too): a needless build costs
 * 20 seconds, a missed one serves old code.
 */
const INPUT_ROOTS = ['spec', 'packages', 'tools/codegen', 'docs/guides', 'patches'];
const INPUT_FILES = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'tsconfig.base.json', 'tsup.config.ts', 'redocly.yaml', 'CHANGELOG.md'];
const NOT_INPUTS = new Set(['node_modules', 'dist', 'test', '.git']);

/** What the build writes, the files a start needs: missing, the build runs whatever the note says. */
const OUTPUTS = [
  'packages/server/dist/main.js',
  'packages/server/dist/svc.js',
  'docs/site/index.html',
  'docs/site/sdk/index.html',
  'docs/site/console/index.html',
];

/** Where the note is kept: beside the installed packages, which a fresh clone does not have either. */
const notePath = (root) => path.join(root, 'node_modules', '.cache', 'svc-build', 'inputs.sha256');

function inputFiles(root) {
  const files = [];
  const walk = (relative) => {
    const absolute = path.join(root, relative);
    let entries;
    try {
      entries = fs.readdirSync(absolute, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (NOT_INPUTS.has(entry.name)) continue;
      const child = path.join(relative, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files.push(child);
    }
  };
  for (const folder of INPUT_ROOTS) walk(folder);
  for (const file of INPUT_FILES) if (fs.existsSync(path.join(root, file))) files.push(file);
  return files.sort();
}

/** A digest of every input's path and content: the same sources give the same digest, whatever their times. */
function inputsDigest(root = repositoryRoot) {
  const hash = crypto.createHash('sha256');
  for (const file of inputFiles(root)) {
    hash.update(`${file.split(path.sep).join('/')}\0`);
    hash.update(fs.readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Whether the last build was made from the sources as they are now, and its output is all there. */
function buildIsCurrent(root = repositoryRoot) {
  if (!OUTPUTS.every((file) => fs.existsSync(path.join(root, file)))) return false;
  try {
    return fs.readFileSync(notePath(root), 'utf8').trim() === inputsDigest(root);
  } catch {
    return false;
  }
}

/** pnpm as it runs this script (its own entry, in `npm_execpath`), else the README's `npx -y pnpm@10`. */
function pnpmCommand() {
  const own = process.env.npm_execpath;
  if (own && /pnpm/.test(path.basename(own))) return [process.execPath, [own]];
  return ['npx', ['-y', 'pnpm@10']];
}

function run(command, args, root, signal) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', signal });
    child.once('error', reject);
    child.once('exit', (code, killedBy) =>
      code === 0 ? resolve() : reject(new Error(`${[command, ...args].join(' ')} ended with ${killedBy ?? `exit code ${code}`}`)),
    );
  });
}

/**
 * Builds, then notes the digest the sources had when the build began (a file saved during the build
 * is built next time). `signal` ends the step under way (SIGTERM) and fails the build.
 */
async function build({ root = repositoryRoot, signal } = {}) {
  const digest = inputsDigest(root);
  const [pnpm, pnpmArgs] = pnpmCommand();
  await run(pnpm, [...pnpmArgs, 'run', 'docs'], root, signal);
  await run(pnpm, [...pnpmArgs, '--filter', '@svc/server', 'run', 'build'], root, signal);
  fs.mkdirSync(path.dirname(notePath(root)), { recursive: true });
  fs.writeFileSync(notePath(root), `${digest}\n`);
}

module.exports = { build, buildIsCurrent, inputsDigest, inputFiles, notePath, OUTPUTS };

if (require.main === module) {
  build().catch((error) => {
    process.stderr.write(`build: ${error.message}\n`);
    process.exit(1);
  });
}
