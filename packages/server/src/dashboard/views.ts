import { toIso } from '../core/clock';
import { describeScope } from '../platform/scopes';

/** Escapes text for HTML element content and double-quoted attributes. */
export const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] as string);

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1c2430}
main{max-width:40rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.4rem;margin-top:0}h2{font-size:1.1rem}
label{display:block;margin:.6rem 0 .2rem}input[type=email],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}
button{padding:.5rem 1.1rem;margin:.8rem .5rem 0 0;border:1px solid #1c2430;border-radius:4px;background:#fff;cursor:pointer}
button.primary{background:#1c5fd4;border-color:#1c5fd4;color:#fff}
ul.scopes{list-style:none;padding:0}ul.scopes li{padding:.35rem 0;border-bottom:1px solid #eee}
.muted{color:#5b6675;font-size:.9rem}.error{color:#a40e26}
table{width:100%;border-collapse:collapse}td,th{text-align:left;padding:.4rem;border-bottom:1px solid #eee;vertical-align:top}
form.inline{display:inline}`;

/** A whole page: no external assets, no scripts. */
export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;

export function loginPage(input: { csrfToken: string; returnTo: string; email?: string; error?: string; signedInAs?: string }): string {
  const notice = input.signedInAs
    ? `<p class="muted">You are signed in as ${escapeHtml(input.signedInAs)}, who does not own this store. Sign in as its owner.</p>`
    : '';
  return page(
    'Sign in · Merchant dashboard',
    `<h1>Sign in to your store</h1>${notice}${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="/dashboard/login">${hidden('csrf', input.csrfToken)}${hidden('return_to', input.returnTo)}
<label for="email">E-mail</label><input id="email" type="email" name="email" autocomplete="username" required value="${escapeHtml(input.email ?? '')}">
<label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required>
<button class="primary" type="submit">Sign in</button></form>`,
  );
}

export interface ConsentView {
  requestId: string;
  csrfToken: string;
  appName: string;
  storeName: string;
  storeDomain: string;
  ownerEmail: string;
  requiredScopes: readonly string[];
  optionalScopes: readonly string[];
  alreadyGranted: readonly string[];
}

function scopeItem(scope: string, optional: boolean, granted: boolean): string {
  const words = `${escapeHtml(describeScope(scope))} <span class="muted">(${escapeHtml(scope)})</span>`;
  const state = granted ? ' <span class="muted">· granted already</span>' : '';
  if (!optional) return `<li>${words}${state}</li>`;
  return `<li><label><input type="checkbox" name="optional_scope" value="${escapeHtml(scope)}" checked> ${words}${state} <span class="muted">· optional</span></label></li>`;
}

/** The consent page: the app, the store, each scope in words (optional ones can be unticked), approve or deny. */
export function consentPage(view: ConsentView): string {
  const granted = new Set(view.alreadyGranted);
  const items = [
    ...view.requiredScopes.map((scope) => scopeItem(scope, false, granted.has(scope))),
    ...view.optionalScopes.map((scope) => scopeItem(scope, true, granted.has(scope))),
  ];
  return page(
    `Allow ${view.appName}? · Merchant dashboard`,
    `<h1>Allow <strong>${escapeHtml(view.appName)}</strong> to access ${escapeHtml(view.storeName)}?</h1>
<p class="muted">Store ${escapeHtml(view.storeName)} (${escapeHtml(view.storeDomain)}) · signed in as ${escapeHtml(view.ownerEmail)}</p>
<form method="post" action="/dashboard/consent">${hidden('csrf', view.csrfToken)}${hidden('request_id', view.requestId)}
<h2>${escapeHtml(view.appName)} will be able to:</h2><ul class="scopes">${items.join('')}</ul>
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button></form>`,
  );
}

export interface InstalledAppView {
  installationId: string;
  appName: string;
  versionNumber: number;
  /** Where Open goes (the page's form-action must allow its origin). */
  launchUrl?: string | undefined;
  scopes: readonly string[];
  generation: number;
  installedAt: number;
}

export interface StoreView {
  id: string;
  name: string;
  domain: string;
  routingState: string;
  installed: InstalledAppView[];
}

function installedRow(storeId: string, csrf: string, app: InstalledAppView): string {
  const action = (verb: string) => `/dashboard/stores/${storeId}/installations/${app.installationId}/${verb}`;
  return `<tr><td><strong>${escapeHtml(app.appName)}</strong><br><span class="muted">version ${app.versionNumber} · generation ${app.generation} · since ${toIso(app.installedAt).slice(0, 10)}</span></td>
<td class="muted">${app.scopes.map((scope) => escapeHtml(describeScope(scope))).join('<br>')}</td>
<td><form class="inline" method="post" action="${action('open')}">${hidden('csrf', csrf)}<button class="primary" type="submit">Open</button></form>
<form class="inline" method="post" action="${action('uninstall')}">${hidden('csrf', csrf)}<button type="submit">Uninstall</button></form></td></tr>`;
}

/** The dashboard home: each store of the owner and its installed apps, with open and uninstall. */
export function homePage(input: { ownerEmail: string; csrfToken: string; stores: StoreView[]; notice?: string }): string {
  const stores = input.stores.map(
    (
      store,
    ) => `<h2>${escapeHtml(store.name)} <span class="muted">${escapeHtml(store.domain)}${store.routingState === 'migrating' ? ' · moving' : ''}</span></h2>
${store.installed.length === 0 ? '<p class="muted">No apps installed.</p>' : `<table><tr><th>App</th><th>Access</th><th></th></tr>${store.installed.map((app) => installedRow(store.id, input.csrfToken, app)).join('')}</table>`}`,
  );
  return page(
    'Apps · Merchant dashboard',
    `<h1>Installed apps</h1><p class="muted">Signed in as ${escapeHtml(input.ownerEmail)}</p>
${input.notice ? `<p role="status">${escapeHtml(input.notice)}</p>` : ''}${stores.join('')}
<form method="post" action="/dashboard/logout">${hidden('csrf', input.csrfToken)}<button type="submit">Sign out</button></form>`,
  );
}

export const messagePage = (title: string, message: string): string =>
  page(`${title} · Merchant dashboard`, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="/dashboard">Back to the dashboard</a></p>`);
