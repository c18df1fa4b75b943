/** The README's table of commands names every script of the root package.json, each on a row of its own. */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');
const scripts = Object.keys((JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);

/** The first cell of each row of the table under "## Commands": the commands it names, in backticks. */
function commandRows(readme: string): string[][] {
  const section = readme.split(/^## Commands$/m)[1]?.split(/^## /m)[0] ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => [...(line.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((match) => (match[1] ?? '').replace(/^-s /, '').replace(/ …$/, '')));
}

test('every root script has one row of its own in the README’s commands', () => {
  const rows = commandRows(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
  expect(rows.filter((row) => row.length !== 1)).toEqual([]);
  const named = rows.map((row) => row[0]);
  expect([...named].sort()).toEqual([...new Set(named)].sort());
  expect(scripts.filter((script) => !named.includes(script))).toEqual([]);
});
