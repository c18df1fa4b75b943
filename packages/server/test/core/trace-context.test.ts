import { deliveryTraceHeaders, eventTraceOf, keptTracestate, parseTraceparent, traceOfRequest } from '../../src/core/trace-context';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';

describe('W3C traceparent', () => {
  it('reads version 00 as the spec writes it', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: '01' });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.flags).toBe('00');
  });

  it('reads a later version by its first four fields, with more after a dash', () => {
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-brings`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: '01' });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['not hex', `00-${TRACE.replace('a', 'g')}-${SPAN}-01`],
    ['a huge header', `00-${TRACE}-${SPAN}-01${' '.repeat(600)}`],
  ])('refuses %s (a new trace starts)', (_case, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it("continues the caller's trace in a span of the service's own", () => {
    const trace = traceOfRequest(`00-${TRACE}-${SPAN}-01`, 'vendor=abc');
    expect(trace).toEqual({ traceId: TRACE, spanId: expect.stringMatching(/^[0-9a-f]{16}$/), flags: '01', tracestate: 'vendor=abc' });
    expect(trace.spanId).not.toBe(SPAN);
    expect(eventTraceOf(trace)).toEqual({ traceparent: `00-${TRACE}-${trace.spanId}-01`, tracestate: 'vendor=abc' });
  });

  it('starts a new trace without a valid traceparent, and then drops tracestate', () => {
    const trace = traceOfRequest('garbage', 'vendor=abc');
    expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(trace.tracestate).toBeUndefined();
    expect(traceOfRequest(undefined, undefined).traceId).not.toBe(trace.traceId);
  });

  it('keeps tracestate only when it is printable and of a sane size', () => {
    expect(keptTracestate('a=1,b=2')).toBe('a=1,b=2');
    expect(keptTracestate('a=\u00e9')).toBeUndefined();
    expect(keptTracestate(`a=${'x'.repeat(600)}`)).toBeUndefined();
  });

  it("gives each webhook attempt the event's trace and a span of its own", () => {
    const headers = deliveryTraceHeaders(`00-${TRACE}-${SPAN}-01`, 'vendor=abc');
    expect(headers.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    expect(headers.traceparent).not.toContain(SPAN);
    expect(headers.tracestate).toBe('vendor=abc');
    expect(deliveryTraceHeaders(null, null)).toEqual({});
  });
});
