import { plainTextOf, sanitizePageHtml } from '../../../src/domain/content/html';

/** The elements a store page may hold (docs/decisions/0016-pages-coupons-reviews.md). */
const ALLOWED_TAGS = new Set(
  (
    'h1 h2 h3 h4 h5 h6 p br hr blockquote pre code div span figure figcaption strong em b i u s small mark sub sup abbr ' +
    'ul ol li dl dt dd table caption thead tbody tfoot tr th td colgroup col a img'
  ).split(' '),
);

const NAMED_REFERENCES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", colon: ':', tab: '\t', newline: '\n' };

/** Character references decoded as a browser would in an attribute (numeric ones with or without `;`). */
function decodeReferences(value: string): string {
  return value
    .replace(/&#x([0-9a-f]+);?/gi, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#([0-9]+);?/g, (_, decimal: string) => String.fromCodePoint(Number(decimal)))
    .replace(/&([a-z]+);/gi, (reference, name: string) => NAMED_REFERENCES[name.toLowerCase()] ?? reference);
}

/** The characters browsers skip inside a URL's scheme: whitespace and control characters (C0, DEL, C1, no-break space). */
const withoutSpaceOrControl = (value: string): string =>
  Array.from(value)
    .filter((character) => {
      const code = character.codePointAt(0) ?? 0;
      return code > 0x20 && (code < 0x7f || code > 0xa0);
    })
    .join('');

/**
 * What in sanitised output could run code or load active content: a tag outside the allow-list
 * (script, svg, math, iframe, object, embed, form, meta, base, style, …), an event handler or
 * `style` attribute, or an attribute whose value, decoded and without whitespace and control
 * characters, holds a `javascript:`, `vbscript:` or `data:` URL. The sanitiser escapes `<` in
 * text, so every `<` followed by a letter in its output opens a real element.
 */
function executableConstructsIn(html: string): string[] {
  const found: string[] = [];
  if (/<\s*script/i.test(html)) found.push('a <script');
  for (const [, tag = '', attributes = ''] of html.matchAll(/<\/?\s*([a-z][a-z0-9:-]*)([^>]*)>?/gi)) {
    if (!ALLOWED_TAGS.has(tag.toLowerCase())) found.push(`the element <${tag}>`);
    for (const [, name = '', quoted, bare] of attributes.matchAll(/([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|([^\s>]*)))?/g)) {
      const attribute = name.toLowerCase();
      if (attribute.startsWith('on') || attribute === 'style' || attribute === 'srcset' || attribute.includes(':')) found.push(`the attribute ${name}`);
      const value = withoutSpaceOrControl(decodeReferences(quoted ?? bare ?? '')).toLowerCase();
      if (/(javascript|vbscript|data|livescript):/.test(value)) found.push(`${name}="${value}"`);
    }
  }
  return found;
}

/** Vectors of the OWASP XSS filter evasion cheat sheet, and the SVG, MathML and mutation tricks that came after it. */
const OWASP_VECTORS: string[] = [
  // Script elements in many spellings
  '<SCRIPT SRC=https://xss.example/xss.js></SCRIPT>',
  '<script>alert(1)</script>',
  '<ScRiPt>alert(1)</sCrIpT>',
  '<SCRIPT/XSS SRC="http://xss.rocks/xss.js"></SCRIPT>',
  '<SCRIPT/SRC="http://xss.rocks/xss.js"></SCRIPT>',
  '<<SCRIPT>alert("XSS");//\\<</SCRIPT>',
  '<SCRIPT SRC=http://xss.rocks/xss.js?< B >',
  '<SCRIPT SRC=//xss.rocks/.j>',
  '<script\n>alert(1)</script\n>',
  '<script\t\ttype="text/javascript">alert(1)</script>',
  '<scr<script>ipt>alert(1)</scr</script>ipt>',
  '</TITLE><SCRIPT>alert("XSS");</SCRIPT>',
  '<IMG """><SCRIPT>alert("XSS")</SCRIPT>"\\>',
  '<!--<script>alert(1)</script>-->',
  "<!--[if gte IE 4]><SCRIPT>alert('XSS');</SCRIPT><![endif]-->",
  '<p><script>document.write("<img src=x onerror=alert(1)>")</script></p>',
  // Images and event handlers
  '<img src=x onerror=alert(1)>',
  '<IMG SRC="javascript:alert(\'XSS\');">',
  "<IMG SRC=javascript:alert('XSS')>",
  "<IMG SRC=JaVaScRiPt:alert('XSS')>",
  '<IMG SRC=javascript:alert(&quot;XSS&quot;)>',
  '<IMG SRC=`javascript:alert("RSnake says, \'XSS\'")`>',
  '<IMG SRC=javascript:alert(String.fromCharCode(88,83,83))>',
  '<IMG SRC=# onmouseover="alert(\'xxs\')">',
  '<IMG SRC= onmouseover="alert(\'xxs\')">',
  '<IMG onmouseover="alert(\'xxs\')">',
  '<IMG SRC=/ onerror="alert(String.fromCharCode(88,83,83))"></img>',
  '<img src=x onerror="&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041">',
  '<img src="https://cdn.example.com/oud.jpg" onerror="alert(1)" onload=alert(2) ONCLICK=alert(3)>',
  '<img src="https://cdn.example.com/oud.jpg" srcset="javascript:alert(1) 1x">',
  '<IMG DYNSRC="javascript:alert(\'XSS\')">',
  '<IMG LOWSRC="javascript:alert(\'XSS\')">',
  '<IMG STYLE="xss:expr/*XSS*/ession(alert(\'XSS\'))">',
  '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
  '<img src="http://cdn.example.com/plain-http.jpg">',
  '<a onmouseover="alert(document.cookie)">xxs link</a>',
  '<a onmouseover=alert(document.cookie)>xxs link</a>',
  '<p onclick="alert(1)">Hi</p><h2 onmouseover=alert(1)>T</h2><table onload=alert(1)><tr><td onclick=alert(1)>c</td></tr></table>',
  '<BODY onload!#$%&()*~+-_.,:;?@[/|\\]^`=alert("XSS")>',
  "<BODY ONLOAD=alert('XSS')>",
  '<div onpointerenter="alert(1)" onfocus=alert(1) tabindex=1 autofocus>x</div>',
  '<details open ontoggle=alert(1)>',
  '<video><source onerror="alert(1)"></video>',
  '<audio src=x onerror=alert(1)>',
  '<input autofocus onfocus=alert(1)>',
  '<marquee onstart=alert(1)>',
  // javascript: with entities, tabs, newlines and mixed case, in every attribute that takes a URL
  '<IMG SRC=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;&#97;&#108;&#101;&#114;&#116;&#40;&#39;&#88;&#83;&#83;&#39;&#41;>',
  '<IMG SRC=&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041>',
  '<IMG SRC=&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A&#x61&#x6C&#x65&#x72&#x74&#x28&#x27&#x58&#x53&#x53&#x27&#x29>',
  '<IMG SRC="jav\tascript:alert(\'XSS\');">',
  '<IMG SRC="jav&#x09;ascript:alert(\'XSS\');">',
  '<IMG SRC="jav&#x0A;ascript:alert(\'XSS\');">',
  '<IMG SRC="jav&#x0D;ascript:alert(\'XSS\');">',
  '<IMG SRC=" &#14;  javascript:alert(\'XSS\');">',
  '<a href="javascript:alert(1)">x</a>',
  '<a href="JaVaScRiPt:alert(1)">x</a>',
  '<a href=" javascript:alert(1)">x</a>',
  '<a href="java\nscript:alert(1)">x</a>',
  '<a href="java\tscript:alert(1)">x</a>',
  '<a href="\u0001javascript:alert(1)">x</a>',
  '<a href="&#106;avascript:alert(1)">x</a>',
  '<a href="&#x6A;avascript&colon;alert(1)">x</a>',
  '<a href="javascript&#58;alert(1)">x</a>',
  '<a href="javascript&#x3a;alert(1)">x</a>',
  '<a href="jav&Tab;ascript:alert(1)">x</a>',
  '<a href="jav&NewLine;ascript:alert(1)">x</a>',
  '<a href="&#x6a&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3a&#x61&#x6c&#x65&#x72&#x74&#x28&#x31&#x29">x</a>',
  '<a href="javascript:alert(1)" target="_blank">x</a>',
  '<a href="vbscript:msgbox(\'XSS\')">x</a>',
  '<a href="VBScript:msgbox(\'XSS\')">x</a>',
  '<a href="livescript:alert(1)">x</a>',
  '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
  '<a href="DATA:text/html,<script>alert(1)</script>">x</a>',
  '<a href="&#100;ata:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
  '<form action="javascript:alert(1)"><input type=submit></form>',
  '<form><button formaction="javascript:alert(1)">X</button></form>',
  '<form><input type="image" formaction=JaVaScRiPt:alert(1) src="https://cdn.example.com/a.png"></form>',
  '<INPUT TYPE="IMAGE" SRC="javascript:alert(\'XSS\');">',
  '<BODY BACKGROUND="javascript:alert(\'XSS\')">',
  '<TABLE BACKGROUND="javascript:alert(\'XSS\')">',
  '<TABLE><TD BACKGROUND="javascript:alert(\'XSS\')">',
  '<blockquote cite="javascript:alert(1)">q</blockquote>',
  '<BGSOUND SRC="javascript:alert(\'XSS\');">',
  '<LINK REL="stylesheet" HREF="javascript:alert(\'XSS\');">',
  '<BR SIZE="&{alert(\'XSS\')}">',
  // SVG
  "<svg/onload=alert('XSS')>",
  '<svg onload=alert(1)>',
  '<SVG ONLOAD=alert(1)>',
  '<svg><script>alert(1)</script></svg>',
  '<svg><script xlink:href="data:,alert(1)"></script></svg>',
  '<svg><a xlink:href="javascript:alert(1)"><text x="20" y="20">XSS</text></a></svg>',
  '<svg><animate onbegin=alert(1) attributeName=x dur=1s>',
  '<svg><set attributeName="href" to="javascript:alert(1)"/></svg>',
  '<svg><foreignObject><iframe src="javascript:alert(1)"></iframe></foreignObject></svg>',
  '<svg><style>@import "https://xss.example/x.css";</style></svg>',
  // MathML
  '<math href="javascript:javascript:alert(1)">CLICKME</math>',
  '<math><maction actiontype="statusline#http://google.com" xlink:href="javascript:alert(2)">CLICKME</maction></math>',
  '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
  '<math><mi xlink:href="data:x,<script>alert(4)</script>">CLICKME</mi></math>',
  '<math><mtext><h1><a><h6></a></h6><mglyph><svg><mtext><style><a title="</style><img src onerror=alert(1)>"></style></h1>',
  // Frames, objects, embeds
  '<IFRAME SRC="javascript:alert(\'XSS\');"></IFRAME>',
  '<iframe src=javascript:alert(1)>',
  '<IFRAME SRC=# onmouseover="alert(document.cookie)"></IFRAME>',
  '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
  '<iframe src=http://xss.rocks/scriptlet.html <',
  '<FRAMESET><FRAME SRC="javascript:alert(\'XSS\');"></FRAMESET>',
  '<OBJECT TYPE="text/x-scriptlet" DATA="http://xss.rocks/scriptlet.html"></OBJECT>',
  '<object data="javascript:alert(1)"></object>',
  '<object data="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="></object>',
  '<EMBED SRC="data:image/svg+xml;base64,PHN2ZyB4bWxuczpzdmc9Imh0dH A6Ly93d3cudzMub3JnLzIwMDAvc3ZnIj48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+" type="image/svg+xml" AllowScriptAccess="always"></EMBED>',
  '<embed src="javascript:alert(1)">',
  '<applet code="x"></applet>',
  // Meta, base, styles
  '<META HTTP-EQUIV="refresh" CONTENT="0;url=javascript:alert(\'XSS\');">',
  '<META HTTP-EQUIV="refresh" CONTENT="0;url=data:text/html base64,PHNjcmlwdD5hbGVydCgnWFNTJyk8L3NjcmlwdD4K">',
  '<META HTTP-EQUIV="refresh" CONTENT="0; URL=http://;URL=javascript:alert(\'XSS\');">',
  '<META HTTP-EQUIV="Link" Content="<http://xss.rocks/xss.css>; REL=stylesheet">',
  '<BASE HREF="javascript:alert(\'XSS\');//">',
  '<base href="https://evil.example/">',
  "<STYLE>@import'http://xss.rocks/xss.css';</STYLE>",
  '<style>@import url("javascript:alert(1)");</style>',
  '<STYLE>li {list-style-image: url("javascript:alert(\'XSS\')");}</STYLE><UL><LI>XSS</br>',
  '<STYLE>BODY{-moz-binding:url("http://xss.rocks/xssmoz.xml#xss")}</STYLE>',
  '<DIV STYLE="background-image: url(javascript:alert(\'XSS\'))">',
  '<DIV STYLE="background-image:\\0075\\0072\\006C\\0028\'\\006a\\0061\\0076\\0061\\0073\\0063\\0072\\0069\\0070\\0074\\003a\\0061\\006c\\0065\\0072\\0074\\0028.1027\\0058.1053\\0053\\0027\\0029\'\\0029">',
  '<DIV STYLE="width: expression(alert(\'XSS\'));">',
  '<p style="color:red;background:url(javascript:alert(1))">red</p>',
  // Parser confusion
  '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
  '<template><script>alert(1)</script></template>',
  '<xmp><script>alert(1)</script></xmp>',
  '<textarea><script>alert(1)</script></textarea>',
  '<title><img src=x onerror=alert(1)></title>',
  '<a href="https://example.com" <img src=x onerror=alert(1)>>x</a>',
  '<img src="https://cdn.example.com/a.jpg"/onerror=alert(1)>',
  '<img/src="https://cdn.example.com/a.jpg"/onerror=alert(1)>',
  '<div><a href=javascript&colon;alert(1)>x</a></div>',
];

describe('sanitizePageHtml', () => {
  it('the checker itself sees the constructs it looks for (so the vectors below test the sanitiser, not a blind checker)', () => {
    expect(executableConstructsIn('<script>x</script>')).not.toEqual([]);
    expect(executableConstructsIn('<p onclick="x">a</p>')).not.toEqual([]);
    expect(executableConstructsIn('<a href="jav&#x09;ascript:x">a</a>')).not.toEqual([]);
    expect(executableConstructsIn('<a href="&#100;ata:text/html,x">a</a>')).not.toEqual([]);
    expect(executableConstructsIn('<svg></svg>')).not.toEqual([]);
    expect(executableConstructsIn('<p style="color:red">a</p>')).not.toEqual([]);
    expect(executableConstructsIn('<p>a &lt;script&gt;</p>')).toEqual([]);
    // Every vector but these is executable as written: an http image is refused but runs nothing; after `SRC=` and a
    // space a browser reads `onmouseover="…"` as the source; `&{…}` ran only in Netscape 4.
    expect(OWASP_VECTORS.filter((vector) => executableConstructsIn(vector).length === 0)).toEqual([
      '<IMG SRC= onmouseover="alert(\'xxs\')">',
      '<img src="http://cdn.example.com/plain-http.jpg">',
      '<BR SIZE="&{alert(\'XSS\')}">',
    ]);
  });

  it.each(OWASP_VECTORS)('nothing executable survives %s', (vector) => {
    const clean = sanitizePageHtml(vector);
    expect({ vector, clean, found: executableConstructsIn(clean) }).toEqual({ vector, clean, found: [] });
    // Sanitising what was sanitised changes nothing more: the output is a fixed point.
    expect(sanitizePageHtml(clean)).toBe(clean);
  });

  it('nothing executable survives when every vector comes in one body, in any case', () => {
    const all = OWASP_VECTORS.join('\n');
    for (const body of [all, all.toUpperCase(), all.toLowerCase()]) expect(executableConstructsIn(sanitizePageHtml(body))).toEqual([]);
  });

  const HARMLESS: string[] = [
    '<h1>About us</h1><h2>Delivery</h2><h3>Riyadh</h3><h4>a</h4><h5>b</h5><h6>c</h6>',
    '<p>Orders within Riyadh arrive in 1 to 2 working days; other cities in 3 to 5.</p>',
    '<p dir="rtl" lang="ar">يمكنك إرجاع المنتجات غير المستخدمة خلال 14 يومًا من الاستلام.</p>',
    '<ul><li>Oud</li><li>Musk</li></ul><ol start="3"><li>Third</li></ol><dl><dt>Term</dt><dd>Meaning</dd></dl>',
    '<p><a href="https://oud.example/returns">Returns</a>, <a href="http://oud.example/">home</a>, <a href="mailto:care@oud.example">write to us</a></p>',
    '<p><a href="/pages/shipping-policy">Shipping policy</a> and <a href="#faq">the FAQ</a></p>',
    '<p><a href="https://oud.example/returns" target="_blank" rel="noopener noreferrer">Returns</a></p>',
    '<figure><img src="https://cdn.oud.example/store.jpg" alt="Our store" width="640" height="480" /><figcaption>Our store</figcaption></figure>',
    '<table><caption>Delivery</caption><thead><tr><th scope="col">City</th><th scope="col">Days</th></tr></thead><tbody><tr><td>Riyadh</td><td colspan="2">1 to 2</td></tr></tbody></table>',
    '<p><strong>Bold</strong>, <em>emphasis</em>, <b>b</b>, <i>i</i>, <u>u</u>, <s>s</s>, <small>small</small>, <mark>mark</mark>, H<sub>2</sub>O, x<sup>2</sup>, <abbr title="Value added tax">VAT</abbr></p>',
    '<blockquote><p>The best oud in Riyadh.</p></blockquote><pre><code>ORDER-1234</code></pre>',
    '<p>One<br />two</p><hr /><div><span>In a span</span></div>',
    '<p>Prices include 15% VAT &amp; shipping is free over 200.00 SAR; 3 &lt; 5 &gt; 1.</p>',
  ];

  it.each(HARMLESS)('keeps store-page markup unchanged: %s', (html) => {
    expect(sanitizePageHtml(html)).toBe(html);
  });

  it('gives a link that opens a new tab rel="noopener noreferrer" in place of any rel it had; other targets and rels are dropped', () => {
    expect(sanitizePageHtml('<a href="https://oud.example" target="_blank">x</a>')).toBe(
      '<a href="https://oud.example" target="_blank" rel="noopener noreferrer">x</a>',
    );
    expect(sanitizePageHtml('<a href="https://oud.example" target="_blank" rel="opener">x</a>')).toBe(
      '<a href="https://oud.example" target="_blank" rel="noopener noreferrer">x</a>',
    );
    expect(sanitizePageHtml('<a href="https://oud.example" target="_self" rel="nofollow">x</a>')).toBe('<a href="https://oud.example">x</a>');
  });

  it('keeps images only with an absolute https source: http, relative, protocol-relative and data sources drop the image', () => {
    for (const src of ['http://cdn.oud.example/a.jpg', '/a.jpg', 'a.jpg', '//cdn.oud.example/a.jpg', 'data:image/png;base64,iVBORw0KGgo=', ' ', '']) {
      expect(sanitizePageHtml(`<p>before<img src="${src}" alt="a" />after</p>`)).toBe('<p>beforeafter</p>');
    }
    expect(sanitizePageHtml('<img alt="no source" />')).toBe('');
    expect(sanitizePageHtml('<img src="HTTPS://cdn.oud.example/a.jpg" />')).toBe('<img src="HTTPS://cdn.oud.example/a.jpg" />');
  });

  it('drops links to other schemes (tel:, ftp:, file:) but keeps the text', () => {
    for (const href of ['tel:+966500000000', 'ftp://files.example/a', 'file:///etc/passwd']) {
      expect(sanitizePageHtml(`<a href="${href}">call</a>`)).toBe('<a>call</a>');
    }
  });

  it('drops forms and their controls with what they hold as state, keeping the text of other unknown elements', () => {
    expect(sanitizePageHtml('<form action="https://oud.example/x"><label>Name</label><input name="n"><textarea>secret</textarea></form>')).toBe('Name');
    expect(sanitizePageHtml('<section><article><p>Kept</p></article></section>')).toBe('<p>Kept</p>');
  });

  it('an empty body stays empty', () => {
    expect(sanitizePageHtml('')).toBe('');
  });
});

describe('plainTextOf', () => {
  it('removes every tag and keeps the text, decoding character references', () => {
    expect(plainTextOf('Delivery in <strong>1 to 5</strong> working days &amp; free returns')).toBe('Delivery in 1 to 5 working days & free returns');
    expect(plainTextOf('الاسترجاع خلال 14 يومًا من الاستلام.')).toBe('الاسترجاع خلال 14 يومًا من الاستلام.');
    expect(plainTextOf('3 < 5 and "quoted"')).toBe('3 < 5 and "quoted"');
  });

  it('drops script, style and other non-text elements with their content', () => {
    expect(plainTextOf('Hello<script>alert(1)</script><style>p{}</style><svg><text>x</text></svg> world')).toBe('Hello world');
  });

  it('markup written as character references does not come back as markup', () => {
    for (const excerpt of ['&lt;script&gt;alert(1)&lt;/script&gt;Hi', '&amp;lt;img src=x onerror=alert(1)&amp;gt;Hi', '&#60;b&#62;Hi']) {
      const text = plainTextOf(excerpt);
      expect(text).toBe('Hi');
    }
  });

  it('plain text is its own plain text', () => {
    for (const text of ['Delivery in 1 to 5 days', 'Tom & Jerry', 'a < b > c', '']) expect(plainTextOf(plainTextOf(text))).toBe(plainTextOf(text));
  });
});
