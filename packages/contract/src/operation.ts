/** What the server and clients need to know about one operation, derived from spec/ alone. */
export interface OperationEntry {
  readonly operationId: string;
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The OpenAPI path template, e.g. `/stores/{storeId}/v1/products/{id}`. */
  readonly path: string;
  readonly tag: string;
  /** `bearer`: a store API access token; `client`: HTTP Basic client credentials; `none`. */
  readonly auth: 'bearer' | 'client' | 'none';
  /** Alternatives: holding every scope of any one entry suffices; `[[]]` means a valid token only. */
  readonly scopes: readonly (readonly string[])[];
  /** Body fields that need further scopes (`x-field-scopes` in the spec). */
  readonly fieldScopes: Readonly<Record<string, readonly string[]>>;
  readonly requiresIdempotencyKey: boolean;
  readonly requiresIfMatch: boolean;
  /** Keyset-paged list (takes `cursor`). */
  readonly paged: boolean;
  /** The query parameters that filter the list (`x-filter: true` in the spec): a bad value of one is INVALID_FILTER. */
  readonly filters: readonly string[];
  /** The lowest documented 2xx/3xx status. */
  readonly successStatus: number;
  readonly requestMediaTypes: readonly string[];
}
