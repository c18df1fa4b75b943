import fs from 'node:fs';
import path from 'node:path';

const SRC = path.join(__dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('transactions are opened one way (docs/write-path.md, "Transactions")', () => {
  it("no module outside db/ opens one with db.transaction: inTransaction joins the caller's or opens one; a savepoint is trx.transaction", () => {
    const offenders = sourceFiles(SRC)
      .filter((file) => !path.relative(SRC, file).startsWith(`db${path.sep}`))
      .flatMap((file) =>
        fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .map((line, index) => ({ line, where: `${path.relative(SRC, file)}:${index + 1}` }))
          .filter(({ line }) => /\.transaction\(/.test(line) && !/\btrx\.transaction\(/.test(line)),
      )
      .map(({ where, line }) => `${where}: ${line.trim()}`);
    expect(offenders).toEqual([]);
  });
});
