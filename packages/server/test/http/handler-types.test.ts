/**
 * The generated `Handlers` type makes the compiler hold every handler to the spec: these cases
 * compile small modules against the real types and expect `tsc` to accept or refuse them.
 */
import path from 'node:path';
import ts from 'typescript';

const serverRoot = path.resolve(__dirname, '..', '..');
const configFile = ts.readConfigFile(path.join(serverRoot, 'tsconfig.json'), ts.sys.readFile);
const options = ts.parseJsonConfigFileContent(configFile.config, ts.sys, serverRoot).options;

/** Type-checks one extra module placed in src/ and returns its diagnostics as text. */
function typeErrors(source: string): string[] {
  const file = path.join(serverRoot, 'src', '__handler_types_probe__.ts');
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (path.resolve(name) === file ? source : readFile(name));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], { ...options, noEmit: true }, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const header = `
import type { Handler, Handlers } from './http/handler';
import { handlers } from './generated/registry';
`;

describe('the generated Handlers type', () => {
  it('accepts the generated registry and a handler that answers a documented response', () => {
    expect(
      typeErrors(`${header}
const all: Handlers = handlers;
const get: Handler<'categories.get'> = async (context) => ({
  status: 200,
  body: {
    data: {
      id: Number(context.params.id), name: 'Perfumes', slug: 'perfumes', description: null, parent_id: null, sort_order: 0,
      status: 'active', image: null, seo_title: null, seo_description: null, products_count: 3, resource_version: 1,
      created_at: '2026-11-01T00:00:00Z', updated_at: '2026-11-01T00:00:00Z',
    },
    meta: { request_id: context.requestId },
  },
});
export { all, get };
`),
    ).toEqual([]);
  }, 60000);

  it('refuses a registry with a handler missing', () => {
    const errors = typeErrors(`${header}
const { ['products.list']: _dropped, ...rest } = handlers;
export const incomplete: Handlers = rest;
`);
    expect(errors.join('\n')).toMatch(/products\.list/);
  }, 60000);

  it('refuses a handler that answers an undocumented status or a wrong body', () => {
    const wrongStatus = typeErrors(`${header}
export const h: Handler<'products.get'> = async (context) => ({ status: 201, body: { data: undefined as never, meta: { request_id: context.requestId } } });
`);
    expect(wrongStatus.length).toBeGreaterThan(0);
    const wrongBody = typeErrors(`${header}
export const h: Handler<'categories.get'> = async (context) => ({ status: 200, body: { data: { id: 'one' }, meta: { request_id: context.requestId } } });
`);
    expect(wrongBody.length).toBeGreaterThan(0);
  }, 60000);

  it('types path, query and body from the spec', () => {
    const errors = typeErrors(`${header}
export const h: Handler<'products.create'> = async (context) => {
  const name: string = context.body.name;
  const kind: 'digital' | 'service' | 'physical' = context.body.product_kind;
  const store: string = context.params.storeId;
  void [name, kind, store];
  throw new Error('not reached');
};
export const l: Handler<'products.list'> = async (context) => {
  const limit: number | undefined = context.query.limit;
  // @ts-expect-error: no such filter in the spec
  void context.query.colour;
  void limit;
  throw new Error('not reached');
};
`);
    expect(errors).toEqual([]);
  }, 60000);
});
