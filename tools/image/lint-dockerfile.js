#!/usr/bin/env node
/**
 * Lints a Dockerfile (default: ./Dockerfile) with dockerfile-utils and fails on any diagnostic. Its
 * CLI, `dockerfile-utils lint`, prints warnings but exits 0 for them; here a warning fails too.
 * Usage: node tools/image/lint-dockerfile.js [Dockerfile...]
 */
const fs = require('node:fs');
const { validate } = require('dockerfile-utils');

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

const files = process.argv.length > 2 ? process.argv.slice(2) : ['Dockerfile'];
let problems = 0;
for (const file of files) {
  const diagnostics = validate(fs.readFileSync(file, 'utf8'));
  for (const { range, severity, message } of diagnostics) {
    console.error(`${file}:${range.start.line + 1}:${range.start.character + 1} ${SEVERITY[severity] ?? 'problem'}: ${message}`);
  }
  problems += diagnostics.length;
}
if (problems > 0) {
  console.error(`${problems} problem(s) in ${files.join(', ')}`);
  process.exit(1);
}
console.log(`${files.join(', ')}: no problems (dockerfile-utils)`);
