/** When `pnpm start` builds: the sources' digest, and what makes a build current. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Plain JavaScript, so that it runs before anything is compiled.
const { buildIsCurrent, inputsDigest, notePath, OUTPUTS } = require('../build.js') as {
  buildIsCurrent(root: string): boolean;
  inputsDigest(root: string): string;
  notePath(root: string): string;
  OUTPUTS: string[];
};

function write(root: string, file: string, text: string): void {
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
}

describe('the build inputs', () => {
  let root: string;

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-build-'));
    write(root, 'package.json', '{}');
    write(root, 'spec/openapi.yaml', 'openapi: 3.1.0\n');
    write(root, 'packages/server/src/app.ts', 'export {};\n');
    write(root, 'docs/guides/01.md', '# Start\n');
  });

  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const built = () => {
    for (const file of OUTPUTS) write(root, file, 'built');
    fs.mkdirSync(path.dirname(notePath(root)), { recursive: true });
    fs.writeFileSync(notePath(root), `${inputsDigest(root)}\n`);
  };

  it('a source, a spec file, a guide or a workspace file changes the digest; a new file does too', () => {
    const before = inputsDigest(root);
    for (const [file, text] of [
      ['packages/server/src/app.ts', 'export const x = 1;\n'],
      ['spec/openapi.yaml', 'openapi: 3.1.1\n'],
      ['docs/guides/01.md', '# Begin\n'],
      ['package.json', '{"name":"x"}'],
      ['packages/client/src/index.ts', 'export {};\n'],
    ]) {
      const previous = inputsDigest(root);
      write(root, file as string, text as string);
      expect(inputsDigest(root)).not.toBe(previous);
    }
    expect(inputsDigest(root)).not.toBe(before);
  });

  it('what the build writes, the tests, the data and installed packages are not inputs', () => {
    const before = inputsDigest(root);
    write(root, 'packages/server/dist/main.js', 'built');
    write(root, 'docs/site/index.html', '<html>');
    write(root, 'packages/server/test/app.test.ts', 'it()');
    write(root, 'data/store.sqlite', 'rows');
    write(root, 'packages/server/node_modules/x/index.js', '');
    write(root, 'docs/decisions/README.md', '# Decision records');
    expect(inputsDigest(root)).toBe(before);
  });

  it('the same content gives the same digest, whatever the files’ times', () => {
    const before = inputsDigest(root);
    const file = path.join(root, 'spec', 'openapi.yaml');
    fs.utimesSync(file, new Date(0), new Date(0));
    expect(inputsDigest(root)).toBe(before);
  });

  it('a build is current only with its note matching the sources and all its output present', () => {
    expect(buildIsCurrent(root)).toBe(false);
    built();
    expect(buildIsCurrent(root)).toBe(true);
    write(root, 'packages/server/src/app.ts', 'export const changed = true;\n');
    expect(buildIsCurrent(root)).toBe(false);
    built();
    fs.rmSync(path.join(root, 'packages', 'server', 'dist'), { recursive: true });
    expect(buildIsCurrent(root)).toBe(false);
  });
});
