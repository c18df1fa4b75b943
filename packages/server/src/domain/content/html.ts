import sanitizeHtml from 'sanitize-html';

/*
 * Store content arrives as HTML from apps and is shown to shoppers inside the storefront, so it is
 * sanitised on the way in against an allow-list (docs/decisions/0016-pages-coupons-reviews.md): what a store page
 * needs survives, anything that can run code or load active content does not. Anything not listed
 * is dropped; the elements below whose content is not page text are dropped with their content.
 */

const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
const TEXT = ['p', 'br', 'hr', 'blockquote', 'pre', 'code', 'div', 'span', 'figure', 'figcaption'];
const EMPHASIS = ['strong', 'em', 'b', 'i', 'u', 's', 'small', 'mark', 'sub', 'sup', 'abbr'];
const LISTS = ['ul', 'ol', 'li', 'dl', 'dt', 'dd'];
const TABLES = ['table', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'colgroup', 'col'];

/** Elements whose content is code, active content or form state, never text of the page. */
const DROPPED_WITH_CONTENT = [
  'script',
  'style',
  'textarea',
  'option',
  'select',
  'noscript',
  'noembed',
  'noframes',
  'template',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'svg',
  'math',
  'title',
  'xmp',
  'plaintext',
];

/** The schemes a link may use; images take https only (a store page must not load mixed or local content). */
const LINK_SCHEMES = ['http', 'https', 'mailto'];
const IMAGE_SCHEMES = ['https'];

/** The rel a link that opens a new browsing context gets, so the opened page cannot reach back (reverse tabnabbing). */
const NEW_CONTEXT_REL = 'noopener noreferrer';

/** The attributes for which `keep(name, value)` holds, in their order. */
const attributesWhere = (attribs: sanitizeHtml.Attributes, keep: (name: string, value: string) => boolean): sanitizeHtml.Attributes =>
  Object.fromEntries(Object.entries(attribs).filter(([name, value]) => keep(name, value)));

/** A link keeps `target` only as `_blank`, and then gets the service's own `rel`; a `rel` the app sent is dropped. */
function linkWithSafeTarget(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const opensNewContext = attribs.target === '_blank';
  const kept = attributesWhere(attribs, (name) => name !== 'rel' && (name !== 'target' || opensNewContext));
  return { tagName, attribs: opensNewContext ? { ...kept, rel: NEW_CONTEXT_REL } : kept };
}

/** An image keeps its `src` only when it is an absolute https URL: relative and protocol-relative sources are dropped. */
function imageWithHttpsSource(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  return { tagName, attribs: attributesWhere(attribs, (name, value) => name !== 'src' || /^https:\/\/[^/]/i.test(value.trim())) };
}

const PAGE_HTML: sanitizeHtml.IOptions = {
  allowedTags: [...HEADINGS, ...TEXT, ...EMPHASIS, ...LISTS, ...TABLES, 'a', 'img'],
  allowedAttributes: {
    '*': ['dir', 'lang', 'title'],
    a: ['href', 'target', 'rel'],
    img: ['src', 'alt', 'width', 'height'],
    ol: ['start', 'reversed'],
    th: ['colspan', 'rowspan', 'scope'],
    td: ['colspan', 'rowspan'],
    col: ['span'],
    colgroup: ['span'],
  },
  allowedSchemes: LINK_SCHEMES,
  allowedSchemesByTag: { img: IMAGE_SCHEMES },
  allowedSchemesAppliedToAttributes: ['href', 'src'],
  allowProtocolRelative: false,
  nonTextTags: DROPPED_WITH_CONTENT,
  disallowedTagsMode: 'discard',
  transformTags: { a: linkWithSafeTarget, img: imageWithHttpsSource },
  // An image whose source was refused shows nothing and is dropped whole.
  exclusiveFilter: (frame) => frame.tag === 'img' && frame.attribs.src === undefined,
};

const PLAIN_TEXT: sanitizeHtml.IOptions = {
  allowedTags: [],
  allowedAttributes: {},
  nonTextTags: DROPPED_WITH_CONTENT,
};

/** A page body as stored and shown: the allowed markup of `html`, everything else removed. */
export const sanitizePageHtml = (html: string): string => sanitizeHtml(html, PAGE_HTML);

/**
 * The text of `html` with every tag removed and character references decoded: what a reader sees.
 * sanitize-html escapes exactly `&`, `<`, `>` and `"` in the text it keeps, so undoing those four
 * gives the text back; that text is stripped again until nothing changes, so markup that was
 * written as character references (`&lt;script&gt;`) does not come back as markup.
 */
export function plainTextOf(html: string): string {
  let text = html;
  for (let previous = ''; text !== previous; ) {
    previous = text;
    text = unescapeText(sanitizeHtml(text, PLAIN_TEXT));
  }
  return text;
}

const unescapeText = (escaped: string): string =>
  escaped
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
