import { Command } from 'commander';
import { listClientSecrets, revokeClientSecret, rotateClientSecret } from '../../platform/apps';
import type { Actions, NoOptions, Run } from '../context';
import { instantCell, keyValues, SHOWN_ONCE, secretJson, secretStatus, table } from '../output';
import { uuid } from '../values';
import { requireApp } from './app-lookup';

const secretRotate: Run<NoOptions, [string]> = async (context, { args: [appId] }) => {
  const app = await requireApp(context.deps, appId);
  const { clientSecret, previousValidUntil } = await rotateClientSecret(context.deps, app.id);
  return {
    json: { client_id: app.id, client_secret: clientSecret, previous_valid_until: instantCell(previousValidUntil) },
    lines: keyValues([
      ['client_id', app.id],
      ['client_secret', `${clientSecret}  ${SHOWN_ONCE}`],
      ['previous_valid_until', `${instantCell(previousValidUntil)}  (the previous secret works until then)`],
    ]),
  };
};

const secretRevoke: Run<NoOptions, [string, string]> = async (context, { args: [appId, idOrHint] }) => {
  const app = await requireApp(context.deps, appId);
  const secret = await revokeClientSecret(context.deps, app.id, idOrHint);
  return {
    json: secretJson(secret, context.deps.clock.now()),
    lines: keyValues([
      ['secret_id', secret.id],
      ['hint', `…${secret.hint}`],
      ['revoked_at', instantCell(secret.revokedAt)],
    ]),
  };
};

const secretList: Run<NoOptions, [string]> = async (context, { args: [appId] }) => {
  const app = await requireApp(context.deps, appId);
  const secrets = await listClientSecrets(context.deps.db, app.id);
  const now = context.deps.clock.now();
  return {
    json: secrets.map((secret) => secretJson(secret, now)),
    lines: table(
      ['ID', 'HINT', 'STATUS', 'CREATED', 'VALID_UNTIL', 'REVOKED'],
      secrets.map((secret) => [
        secret.id,
        `…${secret.hint}`,
        secretStatus(secret, now),
        instantCell(secret.createdAt),
        instantCell(secret.validUntil),
        instantCell(secret.revokedAt),
      ]),
    ),
  };
};

export function secretCommands(actions: Actions): Command {
  const secret = new Command('secret');
  secret
    .command('rotate')
    .description('Issue a new client secret (printed once); the previous one keeps working for 24 hours.')
    .argument('<appId>', '', uuid)
    .action(actions.writes(secretRotate));
  secret
    .command('revoke')
    .description('Revoke a client secret at once, given its id or its last 4 characters.')
    .argument('<appId>', '', uuid)
    .argument('<secretId-or-last-4-chars>')
    .action(actions.writes(secretRevoke));
  secret
    .command('list')
    .description("List an app's client secrets: id, last 4 characters, status (never the secrets themselves).")
    .argument('<appId>', '', uuid)
    .action(actions.reads(secretList));
  return secret;
}
