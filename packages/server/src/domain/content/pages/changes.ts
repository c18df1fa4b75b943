import { invalidBodyField } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import type { Actor, Precondition } from '../../common/actor';
import { sentColumns, type UpdateColumns } from '../../common/columns';
import { requireFreeSlug } from '../../common/slugs';
import { nameKeyOf } from '../../common/text';
import { changeVersioned, createVersioned, deleteVersioned } from '../../common/versioned';
import { plainTextOf, sanitizePageHtml } from '../html';
import { pageResource } from './queries';
import { PAGE_BODY_MAX_LENGTH, type PageColumns, type PageCreate, type PageRow, type PageUpdate, type PublishedStatus } from './row';

/**
 * The body as stored: sanitised. Sanitising escapes what it keeps (`&` becomes `&amp;`), so a body
 * within the spec's length can outgrow it; that one is refused rather than cut.
 */
function storedBody(html: string): string {
  const body = sanitizePageHtml(html);
  if (body.length > PAGE_BODY_MAX_LENGTH) {
    const message = `is longer than ${PAGE_BODY_MAX_LENGTH} characters once sanitised`;
    throw invalidBodyField('/body', message);
  }
  return body;
}

/** The excerpt as stored: plain text (tags removed, character references decoded); null stays null. */
const storedExcerpt = (excerpt: string | null): string | null => (excerpt === null ? null : plainTextOf(excerpt));

const SLUG_NOUN = 'page';

/** `pages.create`: a `draft` page, its body sanitised and its excerpt plain text. */
export function createPage(db: Db, actor: Actor, body: PageCreate): Promise<PageRow> {
  return createVersioned(db, actor, pageResource, {
    columns: async (trx): Promise<PageColumns> => {
      if (body.slug !== undefined) await requireFreeSlug(trx, pageResource.table, SLUG_NOUN, actor.storeId, body.slug);
      return {
        title: body.title,
        title_key: nameKeyOf(body.title),
        slug: body.slug ?? null,
        body: storedBody(body.body ?? ''),
        excerpt: storedExcerpt(body.excerpt ?? null),
        status: 'draft',
        published_at: null,
        seo_title: body.seo_title ?? null,
        seo_description: body.seo_description ?? null,
      };
    },
  });
}

/** The columns of each field of `pages.update`: the title with its search key, the body and excerpt as stored (sanitised). */
const PAGE_UPDATE_COLUMNS: UpdateColumns<PageUpdate, PageColumns> = {
  title: (title) => ({ title, title_key: nameKeyOf(title) }),
  slug: true,
  body: (body) => ({ body: storedBody(body) }),
  excerpt: (excerpt) => ({ excerpt: storedExcerpt(excerpt) }),
  seo_title: true,
  seo_description: true,
};

/** `pages.update`: the body's content changes (never the status), when the precondition accepts the current version. */
export function updatePage(db: Db, actor: Actor, id: number, precondition: Precondition<PageRow>, body: PageUpdate): Promise<PageRow> {
  return changeVersioned(db, actor, pageResource, id, {
    precondition,
    columns: async (current, trx) => {
      if (body.slug !== undefined && body.slug !== null) await requireFreeSlug(trx, pageResource.table, SLUG_NOUN, actor.storeId, body.slug, current.id);
      return sentColumns(body, PAGE_UPDATE_COLUMNS);
    },
  });
}

/**
 * `pages.publication`: `published` or `hidden`, from any status (a draft may be hidden before it
 * is ever shown); the first publication stamps `published_at`, later ones keep it. The status the
 * page already has changes nothing.
 */
export function setPagePublication(db: Db, actor: Actor, id: number, precondition: Precondition<PageRow>, status: PublishedStatus): Promise<PageRow> {
  return changeVersioned(db, actor, pageResource, id, {
    precondition,
    unchanged: (current) => current.status === status,
    columns: (current): Pick<PageColumns, 'status' | 'published_at'> => ({
      status,
      published_at: status === 'published' && current.published_at === null ? actor.now : current.published_at,
    }),
  });
}

/** `pages.delete`: the page is deleted for good, in any status; answers it as it was. */
export const deletePage = (db: Db, actor: Actor, id: number, precondition: Precondition<PageRow>): Promise<PageRow> =>
  deleteVersioned(db, actor, pageResource, id, precondition);
