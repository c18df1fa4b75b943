import type { Knex } from 'knex';

/**
 * Content pages of a store (about us, shipping policy, …). `body` is HTML as sanitised on write,
 * `excerpt` plain text; `title_key` holds the case-folded title the list's search matches. A slug is
 * unique in its store (pages without one are many). Lists page by `id`, optionally by status, on
 * `(store_id, …, id)` indexes. Deleted pages are deleted rows: nothing refers to a page.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pages', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('title', 200).notNullable();
    t.string('title_key', 200).notNullable();
    t.string('slug', 120);
    t.text('body').notNullable().defaultTo('');
    t.string('excerpt', 500);
    t.string('status', 16).notNullable().defaultTo('draft');
    t.bigInteger('published_at'); // the first publication; kept when the page is hidden
    t.string('seo_title', 255);
    t.string('seo_description', 500);
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'slug']);
    t.index(['store_id', 'id']);
    t.index(['store_id', 'status', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pages');
}
