import type { Knex } from 'knex';
import { inTransaction } from '../db/transactions';
import type { ProductRow as CatalogProductRow } from '../domain/catalog/products/row';
import type { Deps } from '../services/container';
import { between, pick, seededRandom } from './random';

/**
 * Demo and benchmark catalogs, written straight into the tables of `004_catalog.ts` with batch
 * inserts (no domain calls, no events: this is seed data, not activity). Everything is derived from
 * a seeded PRNG, so a demo store looks the same on every machine and every start.
 */

export interface DemoCatalogOptions {
  /** How many products (default 300). */
  products?: number;
  /** How many categories (default 8, the first eight of the list below). */
  categories?: number;
}

export interface SeededCatalog {
  categories: number;
  products: number;
  digitalUnits: number;
}

type ProductKind = CatalogProductRow['product_kind'];

interface CategoryTemplate {
  name: string;
  description: string;
  keywords: readonly string[];
  /** Product names of the category, combined with a variant (size, colour, weight…). */
  items: readonly string[];
  variants: readonly string[];
  /** Price range in whole riyals. */
  price: readonly [number, number];
}

/** A Saudi perfume, oud, dates and modest-fashion store; the first eight are the default demo. */
const CATEGORY_TEMPLATES: readonly CategoryTemplate[] = [
  {
    name: 'Perfumes',
    description: 'Oud, musk and oriental perfumes blended in Riyadh.',
    keywords: ['perfume', 'fragrance', 'eau de parfum'],
    items: ['Royal Oud Perfume', 'Amber Musk', 'Taifi Rose', 'White Musk', 'Saffron Night', 'Sandal Breeze', 'Najdi Jasmine', 'Black Oud Intense'],
    variants: ['30 ml', '50 ml', '100 ml'],
    price: [89, 899],
  },
  {
    name: 'Oud',
    description: 'Oud wood chips and oud oils from Cambodia, India and Malaysia.',
    keywords: ['oud', 'agarwood', 'dehn al oud'],
    items: ['Cambodian Oud Chips', 'Indian Oud Oil', 'Malaysian Oud Wood', 'Muattar Oud', 'Hindi Oud Super', 'Trat Oud Oil'],
    variants: ['12 g', '25 g', '3 ml tola', '6 ml'],
    price: [150, 2400],
  },
  {
    name: 'Bakhoor',
    description: 'Bakhoor bricks and chips for the majlis and the home.',
    keywords: ['bakhoor', 'incense', 'home fragrance'],
    items: ['Bakhoor Al Arais', 'Mamoul Bakhoor', 'Sandal Bakhoor', 'Rose Bakhoor', 'Bakhoor Al Majlis', 'Oud Maattar Bakhoor'],
    variants: ['40 g', '100 g', '250 g'],
    price: [25, 320],
  },
  {
    name: 'Gift Sets',
    description: 'Boxed gifts for Ramadan, Eid, weddings and the office.',
    keywords: ['gift', 'gift box', 'eid'],
    items: ['Ramadan Gift Box', 'Eid Perfume Set', 'Wedding Oud Set', 'Corporate Gift Hamper', 'Bride Bakhoor Chest', 'Dates and Coffee Tray'],
    variants: ['Classic', 'Deluxe', 'Royal'],
    price: [199, 1500],
  },
  {
    name: 'Dates',
    description: 'Sukkari, Ajwa and Khalas dates from Al-Qassim and Madinah.',
    keywords: ['dates', 'tamr', 'qassim'],
    items: ['Sukkari Dates', 'Ajwa Dates', 'Khalas Dates', 'Medjool Dates', 'Segai Dates', 'Stuffed Dates with Almonds', 'Rutab Barhi'],
    variants: ['500 g', '1 kg', '3 kg box'],
    price: [29, 260],
  },
  {
    name: 'Coffee',
    description: 'Saudi coffee blends, Khawlani beans and cardamom.',
    keywords: ['coffee', 'gahwa', 'cardamom'],
    items: ['Saudi Coffee with Cardamom', 'Khawlani Coffee Beans', 'Saffron Arabic Coffee', 'Harari Coffee', 'Light Roast Qahwa', 'Cardamom Pods'],
    variants: ['250 g', '500 g', '1 kg'],
    price: [35, 280],
  },
  {
    name: 'Abayas',
    description: 'Everyday and occasion abayas in crepe, linen and nida.',
    keywords: ['abaya', 'modest fashion', 'nida'],
    items: ['Classic Black Abaya', 'Embroidered Bisht Abaya', 'Linen Summer Abaya', 'Open Kimono Abaya', 'Nida Pleated Abaya', 'Crepe Travel Abaya'],
    variants: ['S', 'M', 'L', 'XL'],
    price: [180, 1200],
  },
  {
    name: 'Accessories',
    description: 'Incense burners, perfume bottles, prayer beads and shemaghs.',
    keywords: ['accessories', 'mabkhara', 'misbaha'],
    items: ['Electric Mabkhara', 'Brass Incense Burner', 'Crystal Perfume Bottle', 'Prayer Beads (Misbaha)', 'Red Shemagh', 'Leather Oud Case'],
    variants: ['Gold', 'Silver', 'Black'],
    price: [19, 450],
  },
  {
    name: 'Musk',
    description: 'Solid and oil musks: tahara, white and Makki musk.',
    keywords: ['musk', 'tahara', 'makki'],
    items: ['Musk Tahara', 'Makki Musk Oil', 'White Musk Solid', 'Musk Al Ghazal'],
    variants: ['3 ml', '6 ml', '12 ml'],
    price: [15, 180],
  },
  {
    name: 'Home Fragrance',
    description: 'Room sprays, reed diffusers and scented candles.',
    keywords: ['home', 'diffuser', 'room spray'],
    items: ['Oud Room Spray', 'Reed Diffuser Amber', 'Scented Candle Rose', 'Fabric Mist Musk'],
    variants: ['200 ml', '500 ml'],
    price: [39, 260],
  },
  {
    name: 'Sweets',
    description: 'Maamoul, kleija and chocolate-covered dates.',
    keywords: ['sweets', 'maamoul', 'kleija'],
    items: ['Date Maamoul', 'Qassimi Kleija', 'Chocolate Dates', 'Saffron Luqaimat Mix'],
    variants: ['12 pieces', '24 pieces', '1 kg'],
    price: [25, 190],
  },
  {
    name: 'Prayer Essentials',
    description: 'Prayer mats, prayer clothes and pocket Qurans.',
    keywords: ['prayer', 'sajjada', 'ramadan'],
    items: ['Velvet Prayer Mat', 'Travel Prayer Mat', 'Prayer Dress', 'Pocket Mushaf'],
    variants: ['Green', 'Navy', 'Burgundy'],
    price: [35, 320],
  },
];

/** Non-physical products: digital ones deliver codes or files, services book a slot. */
const DIGITAL_ITEMS: readonly string[] = [
  'E-Gift Card 100 SAR',
  'E-Gift Card 250 SAR',
  'Perfume Layering Guide (PDF)',
  'Oud Grading Online Course',
  'Bakhoor Blending Masterclass (Video)',
];
const SERVICE_ITEMS: readonly string[] = [
  'Gift Wrapping Service',
  'Personal Perfume Consultation',
  'Custom Bottle Engraving',
  'Abaya Tailoring and Hemming',
  'Corporate Gifting Consultation',
];
const DELIVERY: Readonly<Record<ProductKind, string>> = {
  physical: 'Shipped from Riyadh within two working days.',
  digital: 'Delivered by e-mail right after payment.',
  service: 'We contact you within one working day to book a time.',
};
const DEVICE_SETS: readonly (Record<string, true> | null)[] = [{ ios: true, android: true }, { ios: true, android: true, web: true }, { web: true }, null];

const DEMO_SEED = 0x5a1a_2026;
/** Rows per INSERT: 500 rows × ~22 columns stays far below SQLite's and PostgreSQL's variable limits. */
const CHUNK = 500;

const devicesOf = (devices: Record<string, true> | null): string | null => (devices ? JSON.stringify(devices) : null);

export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '');
}

/** Keeps keywords unique, within the schema's bounds (≤ 20 items, 1–50 characters). */
function keywordsOf(...groups: readonly (readonly string[])[]): string[] {
  const seen = new Set<string>();
  for (const word of groups.flat()) {
    const keyword = word.trim().toLowerCase().slice(0, 50);
    if (keyword.length > 0) seen.add(keyword);
  }
  return [...seen].slice(0, 20);
}

interface CategoryRow {
  store_id: string;
  name: string;
  name_key: string;
  slug: string;
  description: string;
  parent_id: null;
  sort_order: number;
  status: 'active' | 'hidden';
  image: string;
  seo_title: string;
  seo_description: string;
  resource_version: 1;
  created_at: number;
  updated_at: number;
}

/** A product as seeded: every column but the id the database assigns. */
type ProductRow = Omit<CatalogProductRow, 'id'>;

function templateOf(index: number): CategoryTemplate {
  const template = CATEGORY_TEMPLATES[index % CATEGORY_TEMPLATES.length] as CategoryTemplate;
  if (index < CATEGORY_TEMPLATES.length) return template;
  const round = Math.floor(index / CATEGORY_TEMPLATES.length) + 1;
  return { ...template, name: `${template.name} ${round}` }; // more categories than templates: numbered copies
}

function categoryRows(storeId: string, count: number, now: number, cdn: string): CategoryRow[] {
  return Array.from({ length: count }, (_, index) => {
    const template = templateOf(index);
    const slug = slugify(template.name);
    return {
      store_id: storeId,
      name: template.name,
      name_key: template.name.toLowerCase(),
      slug,
      description: template.description,
      parent_id: null,
      sort_order: index + 1,
      status: 'active',
      image: `${cdn}/categories/${slug}.jpg`,
      seo_title: template.name,
      seo_description: template.description,
      resource_version: 1,
      created_at: now,
      updated_at: now,
    };
  });
}

/** Inserts rows in chunks of CHUNK, each chunk in its own transaction. */
async function insertChunked(db: Knex, table: string, rows: readonly object[]): Promise<void> {
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    await inTransaction(db, (trx) => trx(table).insert(chunk));
  }
}

async function storeCategoryIds(db: Knex, storeId: string): Promise<{ id: number; name: string }[]> {
  return db('categories').where({ store_id: storeId }).orderBy('id').select<{ id: number; name: string }[]>('id', 'name');
}

const cdnOf = (storeId: string) => `https://cdn.example.com/stores/${storeId}`;

/**
 * A realistic demo catalog for one store: `categories` categories and `products` products, mixed
 * physical (≈ 75 %), digital (≈ 13 %) and service (≈ 12 %); about 60 % active and priced, 15 %
 * priced but inactive, 25 % inactive with `price_state` `required`. Digital products get a few
 * unsold codes. Does nothing when the store already has categories or products.
 */
export async function seedDemoCatalog(deps: Deps, storeId: string, { products = 300, categories = 8 }: DemoCatalogOptions = {}): Promise<SeededCatalog> {
  const { db, clock } = deps;
  const empty: SeededCatalog = { categories: 0, products: 0, digitalUnits: 0 };
  const [existingCategory, existingProduct] = await Promise.all([
    db('categories').where({ store_id: storeId }).first('id'),
    db('products').where({ store_id: storeId }).first('id'),
  ]);
  if (existingCategory || existingProduct) return empty;

  const random = seededRandom(DEMO_SEED);
  const now = clock.now();
  const cdn = cdnOf(storeId);
  await insertChunked(db, 'categories', categoryRows(storeId, categories, now, cdn));
  const categoryIds = await storeCategoryIds(db, storeId);

  const slugs = new Set<string>();
  const rows: ProductRow[] = [];
  for (let index = 0; index < products; index += 1) {
    const categoryIndex = categories > 0 ? index % categories : -1;
    const template = templateOf(Math.max(categoryIndex, 0));
    const roll = random();
    const kind: ProductKind = roll < 0.75 ? 'physical' : roll < 0.88 ? 'digital' : 'service';
    const base = kind === 'digital' ? pick(random, DIGITAL_ITEMS) : kind === 'service' ? pick(random, SERVICE_ITEMS) : pick(random, template.items);
    const name = kind === 'physical' ? `${base} ${pick(random, template.variants)}` : base;
    let slug = slugify(name);
    for (let n = 2; slugs.has(slug); n += 1) slug = `${slugify(name)}-${n}`;
    slugs.add(slug);

    const state = random();
    const priced = state < 0.75;
    const active = state < 0.6;
    const [low, high] = kind === 'physical' ? template.price : kind === 'digital' ? [50, 500] : [25, 350];
    const price = priced ? between(random, low, high) * 100 + (random() < 0.3 ? 50 : 0) : 0;
    const oldPrice = priced && random() < 0.3 ? price + between(random, 1, Math.max(1, Math.floor(price / 500))) * 100 : null;

    const imageCount = between(random, 1, 3);
    const images = Array.from({ length: imageCount }, (_, sort) => ({
      url: `${cdn}/products/${slug}-${sort + 1}.jpg`,
      alt: sort === 0 ? name : `${name}, view ${sort + 1}`,
      sort,
      is_default: sort === 0,
    }));
    const shortDesc = `${name}: ${template.description.charAt(0).toLowerCase()}${template.description.slice(1)}`.slice(0, 500);
    const category = categoryIndex >= 0 && random() < 0.92 ? categoryIds[categoryIndex] : undefined;
    rows.push({
      store_id: storeId,
      name,
      description: `<p>${shortDesc}</p><p>${DELIVERY[kind]}</p>`,
      short_desc: random() < 0.85 ? shortDesc : null,
      category_id: category?.id ?? null,
      slug,
      keywords: JSON.stringify(
        keywordsOf(
          template.keywords,
          name
            .split(/\s+/)
            .filter((word) => word.length > 3)
            .slice(0, 3),
        ),
      ),
      supported_devices: kind === 'digital' ? devicesOf(pick(random, DEVICE_SETS)) : null,
      seo_title: random() < 0.7 ? name : null,
      seo_description: random() < 0.7 ? shortDesc.slice(0, 160) : null,
      og_image: random() < 0.5 ? (images[0] as { url: string }).url : null,
      images: JSON.stringify(images),
      product_kind: kind,
      status: active ? 'active' : 'inactive',
      price_halalas: price,
      old_price_halalas: oldPrice,
      price_state: priced ? 'ready' : 'required',
      quantity: kind === 'physical' ? (random() < 0.1 ? 0 : between(random, 1, 250)) : kind === 'service' ? between(random, 0, 30) : 0,
      resource_version: 1,
      created_at: now,
      updated_at: now,
    });
  }
  await insertChunked(db, 'products', rows);

  // Digital products hold codes (units); their stock is the count of undelivered ones.
  const digital = await db('products').where({ store_id: storeId, product_kind: 'digital' }).orderBy('id').select<{ id: number }[]>('id');
  const units = digital.flatMap(({ id }) =>
    Array.from({ length: between(random, 0, 12) }, () => ({
      store_id: storeId,
      product_id: id,
      code: `GIFT-${Math.floor(random() * 0xffffffff)
        .toString(36)
        .toUpperCase()
        .padStart(7, '0')}-${id}`,
      adjustment_id: null,
      delivered_at: null,
      created_at: now,
    })),
  );
  await insertChunked(db, 'digital_units', units);
  return { categories: categoryIds.length, products: rows.length, digitalUnits: units.length };
}

/**
 * `count` products for load tests, fast: rows built from a few templates and inserted 500 per
 * statement, one transaction per statement (100,000 take a few seconds on SQLite). The store gets
 * the eight default categories if it has none; slugs continue after the store's existing products.
 */
export async function seedCatalogForBench(db: Knex, storeId: string, count: number, now: number = Date.now()): Promise<void> {
  const cdn = cdnOf(storeId);
  if (!(await db('categories').where({ store_id: storeId }).first('id'))) await insertChunked(db, 'categories', categoryRows(storeId, 8, now, cdn));
  const categoryIds = (await storeCategoryIds(db, storeId)).map(({ id }) => id);
  const counted = await db('products').where({ store_id: storeId }).count<{ n: number | string }[]>({ n: '*' });
  const offset = Number(counted[0]?.n ?? 0);
  const random = seededRandom(DEMO_SEED + 1);

  for (let start = 0; start < count; start += CHUNK) {
    const chunk: ProductRow[] = [];
    for (let index = start; index < Math.min(count, start + CHUNK); index += 1) {
      const number = offset + index + 1;
      const template = templateOf(index % 8);
      const name = `${template.items[index % template.items.length]} ${template.variants[index % template.variants.length]} #${number}`;
      const slug = slugify(name); // unique: the name ends with the number
      const url = `${cdn}/products/${slug}-1.jpg`;
      const state = random();
      const price = state < 0.8 ? between(random, template.price[0], template.price[1]) * 100 : 0;
      chunk.push({
        store_id: storeId,
        name,
        description: `<p>${name}. ${template.description}</p>`,
        short_desc: template.description,
        category_id: categoryIds.length > 0 && index % 10 !== 9 ? (categoryIds[index % categoryIds.length] as number) : null,
        slug,
        keywords: JSON.stringify(template.keywords),
        supported_devices: null,
        seo_title: name,
        seo_description: template.description,
        og_image: null,
        images: JSON.stringify([{ url, alt: name, sort: 0, is_default: true }]),
        product_kind: index % 20 === 0 ? 'digital' : index % 20 === 1 ? 'service' : 'physical',
        status: state < 0.65 ? 'active' : 'inactive',
        price_halalas: price,
        old_price_halalas: price > 0 && state < 0.2 ? price + 1000 : null,
        price_state: price > 0 ? 'ready' : 'required',
        quantity: index % 20 === 0 ? 0 : Math.floor(random() * 200),
        resource_version: 1,
        created_at: now,
        updated_at: now,
      });
    }
    await inTransaction(db, (trx) => trx('products').insert(chunk));
  }
}
