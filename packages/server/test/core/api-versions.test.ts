import { apiVersions, CURRENT_API_VERSION } from '@svc/contract';
import { type ApiVersionEntry, apiVersionRegistry, registryProblems, startOfDay, unsupportedVersion, versionHeaders } from '../../src/core/api-versions';
import { STORE_API_REQUEST_HEADERS } from '../../src/http/cors';
import { publishedApiVersions } from '../../src/services/api-versions';
import { API_VERSION } from '../../src/services/outbox';

const entry = (version: string, fields: Partial<ApiVersionEntry> = {}): ApiVersionEntry => ({
  version,
  released: version,
  deprecated: null,
  sunset: null,
  changelog: version,
  ...fields,
});

describe('the registry of date versions', () => {
  it('is the contract’s: one version today, current, neither deprecated nor sunset, the one the outbox writes', () => {
    expect(apiVersions).toEqual([entry('2026-10-15')]);
    expect(publishedApiVersions.current.version).toBe(CURRENT_API_VERSION);
    expect(publishedApiVersions.stateOf(publishedApiVersions.current, Date.now())).toBe('current');
    expect(API_VERSION).toBe(CURRENT_API_VERSION);
    expect(versionHeaders(publishedApiVersions.current)).toEqual({ 'API-Version': '2026-10-15' });
  });

  it('names its header as the CORS policy lets browsers send it', () => {
    expect(STORE_API_REQUEST_HEADERS).toContain('API-Version');
  });

  it('refuses entries that break its rules, the 12 months of notice among them', () => {
    expect(registryProblems([])).toEqual(['the registry lists no version']);
    expect(registryProblems([entry('2026-10-15'), entry('2025-04-01')])).toEqual(['version 2025-04-01 is listed after 2026-10-15: oldest first, each once']);
    expect(registryProblems([entry('2026-02-30')])).toEqual([
      'version 2026-02-30: version "2026-02-30" is not a YYYY-MM-DD date',
      'version 2026-02-30: released "2026-02-30" is not a YYYY-MM-DD date',
    ]);
    expect(registryProblems([entry('2026-10-15', { deprecated: '2027-01-01' })])).toEqual([
      'version 2026-10-15 is the newest: it cannot be deprecated or sunset',
    ]);
    expect(registryProblems([entry('2025-04-01', { deprecated: '2026-01-01' }), entry('2026-10-15')])).toEqual([
      'version 2025-04-01 is deprecated on 2026-01-01, before 2026-10-15 replaces it (2026-10-15)',
    ]);
    expect(registryProblems([entry('2025-04-01', { sunset: '2028-01-01' }), entry('2026-10-15')])).toEqual([
      'version 2025-04-01 has a sunset without a deprecation',
    ]);
    expect(registryProblems([entry('2025-04-01', { deprecated: '2026-10-15', sunset: '2027-10-14' }), entry('2026-10-15')])).toEqual([
      'version 2025-04-01: sunset 2027-10-14 is less than 12 months after its deprecation on 2026-10-15',
    ]);
    expect(registryProblems([entry('2025-04-01', { deprecated: '2026-10-15', sunset: '2027-10-15' }), entry('2026-10-15')])).toEqual([]);
    expect(registryProblems([entry('2026-10-15', { changelog: '../x' })])).toEqual([
      'version 2026-10-15: changelog "../x" is not an anchor (letters, digits, hyphens)',
    ]);
    expect(() => apiVersionRegistry([])).toThrow('The version registry is not valid: the registry lists no version');
  });

  const registry = apiVersionRegistry([
    entry('2024-04-01', { deprecated: '2025-04-01', sunset: '2026-04-01' }),
    entry('2025-04-01', { deprecated: '2026-10-15', sunset: '2027-10-15' }),
    entry('2026-10-15'),
  ]);

  it('tells where each version stands: retired from the first instant of its sunset day', () => {
    const [retired, deprecated, current] = registry.entries as [ApiVersionEntry, ApiVersionEntry, ApiVersionEntry];
    const now = Date.parse('2026-11-22T09:00:00Z');
    expect([retired, deprecated, current].map((version) => registry.stateOf(version, now))).toEqual(['retired', 'deprecated', 'current']);
    expect(registry.stateOf(deprecated, startOfDay('2027-10-15') - 1)).toBe('deprecated');
    expect(registry.stateOf(deprecated, startOfDay('2027-10-15'))).toBe('retired');
    expect(registry.supportedAt(now).map((version) => version.version)).toEqual(['2025-04-01', '2026-10-15']);
  });

  it('writes Deprecation (RFC 9745), Sunset (RFC 8594) and Link for a deprecated version', () => {
    expect(versionHeaders(registry.find('2025-04-01') as ApiVersionEntry)).toEqual({
      'API-Version': '2025-04-01',
      Deprecation: '@1792022400',
      Sunset: 'Fri, 15 Oct 2027 00:00:00 GMT',
      Link: '</docs/#/changelog/2025-04-01>; rel="deprecation"; type="text/html", </docs/#/changelog/2025-04-01>; rel="sunset"; type="text/html"',
    });
    expect(new Date(1792022400 * 1000).toISOString()).toBe('2026-10-15T00:00:00.000Z');
  });

  it('refuses an unknown or retired version with the supported ones in the details', () => {
    const now = Date.parse('2026-11-22T09:00:00Z');
    const refusal = unsupportedVersion(registry, now, '2024-04-01');
    expect({ code: refusal.code, status: refusal.status, message: refusal.message, extras: refusal.extras }).toEqual({
      code: 'UNSUPPORTED_VERSION',
      status: 400,
      message: 'The API-Version header\'s "2024-04-01" was retired on 2026-04-01.',
      extras: {
        details: [
          { location: 'header', field: 'API-Version', message: '2025-04-01 (deprecated, sunset on 2027-10-15)' },
          { location: 'header', field: 'API-Version', message: '2026-10-15 (the current version)' },
        ],
      },
    });
    expect(unsupportedVersion(registry, now, 'x'.repeat(500)).message.length).toBeLessThan(120);
  });
});
