import { interfaceDocument } from './spec-helpers';

/** The rows of the first markdown table after a heading, as arrays of trimmed cells. */
export function tableAfter(heading: string, document = interfaceDocument): string[][] {
  const start = document.indexOf(heading);
  if (start < 0) throw new Error(`heading not found: ${heading}`);
  const lines = document.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return rows.slice(2); // header and separator
}

export const codeSpans = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

export interface DocumentedOperation {
  operationId: string;
  method: string;
  path: string;
  scopeCell: string;
}

const STORE_PREFIX = '/stores/{storeId}/v1';

/** "Store endpoints with known shape": operationId, method, path and the scope column. */
export function knownShapeOperations(): DocumentedOperation[] {
  return tableAfter('### Store endpoints with known shape').map(([id = '', methodPath = '', scopeCell = '']) => {
    const [method = '', pathCode = ''] = methodPath.split(' ');
    return { operationId: codeSpans(id)[0] ?? '', method: method.toLowerCase(), path: STORE_PREFIX + pathCode.replace(/`/g, ''), scopeCell };
  });
}

/** "Store endpoints with method and path only": every method and path of every group. */
export function pathOnlyOperations(): { group: string; method: string; path: string }[] {
  return tableAfter('### Store endpoints with method and path only').flatMap(([group = '', cell = '']) =>
    cell.split(';').map((entry) => {
      const [method = '', pathCode = ''] = entry.trim().split(' ');
      return { group, method: method.toLowerCase(), path: STORE_PREFIX + pathCode.replace(/`/g, '') };
    }),
  );
}

export function oauthOperations(): { method: string; path: string }[] {
  return tableAfter('### OAuth endpoints (under `{base_url}`)').map(([methodPath = '']) => {
    const [method = '', pathCode = ''] = methodPath.split(' ');
    return { method: method.toLowerCase(), path: pathCode.replace(/`/g, '') };
  });
}

/** The scope alternatives a scope cell names; `[[]]` for "none required". */
export function scopeAlternatives(cell: string): string[][] | 'not shown' {
  if (cell === 'none required') return [[]];
  if (cell === 'not shown') return 'not shown';
  const scopes = codeSpans(cell);
  if (cell.startsWith('any of')) return scopes.map((scope) => [scope]);
  return [[scopes[0] as string]];
}

export function contractScopes(): string[] {
  const line = interfaceDocument.split('\n').find((l) => l.includes('Scope names in the contract:'));
  if (!line) throw new Error('scope list not found');
  return codeSpans(line.slice(line.indexOf('Scope names in the contract:')));
}

export interface FieldRow {
  field: string;
  type: string;
  required?: string;
  notes: string;
}

/** A field table: `| Field | Type | [Required |] Notes |`. */
export function fieldTable(heading: string): FieldRow[] {
  const start = interfaceDocument.indexOf(heading);
  const header =
    interfaceDocument
      .slice(start)
      .split('\n')
      .find((l) => l.startsWith('|')) ?? '';
  const hasRequired = header.includes('Required');
  return tableAfter(heading).map((cells) => {
    const [field = '', type = '', a = '', b = ''] = cells;
    return hasRequired ? { field: codeSpans(field)[0] ?? field, type, required: a, notes: b } : { field: codeSpans(field)[0] ?? field, type, notes: a };
  });
}
