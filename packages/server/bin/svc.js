#!/usr/bin/env node
// The admin CLI's command (the package's `bin`). It exists before the build does, so that the
// workspace can link it at install time; it runs the built CLI, or says how to make it.
const path = require('node:path');
const fs = require('node:fs');

const built = path.join(__dirname, '..', 'dist', 'svc.js');
if (!fs.existsSync(built)) {
  process.stderr.write(`svc: ${path.relative(process.cwd(), built)} is not built yet: run \`npx -y pnpm@10 build\` first\n`);
  process.exit(1);
}
require(built);
