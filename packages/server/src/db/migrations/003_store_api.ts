import type { Knex } from 'knex';

/**
 * The store API's shared machinery: named server secrets (the keys of ETag and cursor HMACs, in
 * the database so every instance on it agrees) and idempotency keys (the first response to a
 * keyed POST, replayed for 24 hours; an `in_progress` row is a claim whose lease may run out).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('service_keys', (t) => {
    t.string('name', 64).primary();
    t.text('key_material').notNullable(); // base64url of 32 random bytes
    t.bigInteger('created_at');
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('id').primary();
    t.uuid('installation_id').notNullable();
    t.string('operation_id', 64).notNullable();
    t.string('idempotency_key', 128).notNullable();
    t.string('request_hash', 64).notNullable();
    t.string('state', 16).notNullable(); // 'in_progress' | 'completed'
    t.integer('response_status');
    t.text('response_headers'); // JSON object
    t.text('response_body'); // JSON: the stored outcome, a response or an error
    t.bigInteger('lease_until'); // an in_progress claim past this was abandoned and may be taken over
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable(); // from here on the key is treated as never used
    t.unique(['installation_id', 'operation_id', 'idempotency_key']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('idempotency_keys');
  await knex.schema.dropTableIfExists('service_keys');
}
