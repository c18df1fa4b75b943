#!/usr/bin/env node
// The admin CLI's command (the package's `bin`). It exists before the build does, so that the
// workspace can link it at install time; it runs the built CLI, or says how to make it.
const path = require('node:path');
const fs = require('node:fs');

const built = path.join(__dirname, '..', 'dist', 'svc.js');
const rebuild = (what) => {
  process.stderr.write(`svc: ${path.relative(process.cwd(), built)} ${what}: run \`npx -y pnpm@10 build\` first\n`);
  process.exit(1);
};
if (!fs.existsSync(built)) rebuild('is not built yet');
// Required from here, the bundle is not the process's entry (`require.main`): it runs the command when called.
const cli = require(built);
if (typeof cli.runCommandLine !== 'function') rebuild('is an older build that this command cannot run');
cli.runCommandLine();
