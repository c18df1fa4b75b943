import type { Order, Product } from '@svc/client';
import type { ReceivedEvent } from './storage';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Everything the service or a shopper wrote (a product's name, a customer's) is text, never markup. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => ESCAPES[character] as string);

export function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #ddd}</style>
</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

function table(caption: string, headings: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<h2>${caption}</h2><p>${empty}</p>`;
  const head = headings.map((heading) => `<th>${heading}</th>`).join('');
  const body = rows.map((cells) => `<tr>${cells.map((cell) => `<td>${escapeHtml(cell)}</td>`).join('')}</tr>`).join('');
  return `<h2>${caption}</h2><table aria-label="${caption}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

export function storePage(view: { storeId: string; products: Product[]; orders: Order[]; events: ReceivedEvent[] }): string {
  return layout(
    'Example App',
    `<p>Store ${escapeHtml(view.storeId)}</p>` +
      table(
        'Products',
        ['Name', 'Status', 'Price'],
        view.products.map((product) => [product.name, product.status, `${product.price} SAR`]),
        'No products yet.',
      ) +
      table(
        'Recent orders',
        ['Reference', 'Status', 'Payment', 'Total'],
        view.orders.map((order) => [order.reference, order.status, order.payment_status, `${order.amounts.total} SAR`]),
        'No orders yet.',
      ) +
      table(
        'Recent events',
        ['Event', 'What', 'Occurred'],
        view.events.map((event) => [event.type, event.summary, event.occurredAt]),
        'No events yet.',
      ),
  );
}
