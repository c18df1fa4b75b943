import { Command } from 'commander';
import { createStore, findOwnerByEmail, listStores, PlatformError } from '../../platform/stores';
import type { Actions, Context, Run } from '../context';
import { instantCell, keyValues, ownerJson, storeFacts, storeJson, table } from '../output';
import { storeMigrationCommands } from './migration';

interface CreateOptions {
  name: string;
  domain: string;
  ownerEmail: string;
  ownerName?: string;
  password?: string;
}

/**
 * A new owner needs a password; without one, say so plainly rather than let the domain report a
 * too-short empty password. An existing owner keeps theirs, so none is needed then.
 */
async function ownerPassword(context: Context, email: string, given: string | undefined): Promise<string> {
  const password = given ?? context.env.SVC_OWNER_PASSWORD ?? '';
  if (password === '' && !(await findOwnerByEmail(context.deps.db, email))) {
    throw new PlatformError(`${email} has no account yet: give the new owner's password with --password or SVC_OWNER_PASSWORD`);
  }
  return password;
}

const storeCreate: Run<CreateOptions> = async (context, { options }) => {
  const password = await ownerPassword(context, options.ownerEmail, options.password);
  const { store, owner, ownerCreated } = await createStore(context.deps, {
    name: options.name,
    domain: options.domain,
    owner: { email: options.ownerEmail, name: options.ownerName ?? '', password },
  });
  const account = ownerCreated ? 'new account' : `existing account${password === '' ? '' : '; password unchanged'}`;
  return {
    json: { store: storeJson(store), owner: ownerJson(owner), owner_created: ownerCreated },
    lines: keyValues([...storeFacts(store), ['owner', `${owner.email} (${account})`]]),
  };
};

const storeList: Run = async (context) => {
  const stores = await listStores(context.deps.db);
  return {
    json: stores.map(storeJson),
    lines: table(
      ['ID', 'DOMAIN', 'NAME', 'ROUTING', 'EPOCH', 'CREATED'],
      stores.map((store) => [store.id, store.domain, store.name, store.routing_state, String(store.route_epoch), instantCell(store.created_at)]),
    ),
  };
};

export function storeCommands(actions: Actions): Command {
  const store = new Command('store');
  store
    .command('create')
    .description("Create a store, and its owner if the e-mail is new (the new owner's password: SVC_OWNER_PASSWORD, or --password, which shell history keeps).")
    .requiredOption('--name <name>')
    .requiredOption('--domain <domain>')
    .requiredOption('--owner-email <email>')
    .option('--owner-name <name>')
    .option('--password <password>')
    .action(actions.writes(storeCreate));
  store.command('list').description('List the stores.').action(actions.reads(storeList));
  store.addCommand(storeMigrationCommands(actions));
  return store;
}
