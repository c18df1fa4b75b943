import type { Knex } from 'knex';

/**
 * The check of the sealing key (services/sealing-key.ts): one row holding the id of the key the
 * database's values are sealed under and a value sealed under it. An instance whose keys do not
 * open it refuses to start. Never the key itself.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sealing_key_check', (t) => {
    t.string('name', 32).primary(); // always 'canary': the primary key lets the first instance's insert win
    t.string('key_id', 32).notNullable();
    t.text('canary_sealed').notNullable();
    t.bigInteger('updated_at').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('sealing_key_check');
}
