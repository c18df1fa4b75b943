import path from 'node:path';

/** The repository root, and the server and the CLI as `pnpm build` leaves them. */
export const repositoryRoot = path.resolve(__dirname, '..', '..');
export const builtServer = path.join(repositoryRoot, 'packages', 'server', 'dist', 'main.js');
export const builtCli = path.join(repositoryRoot, 'packages', 'server', 'dist', 'svc.js');
