import type { paths } from '@svc/contract';

type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';

/** An operation whose `Idempotency-Key` the client makes when the caller gives none: optional in its parameters. */
type KeyMadeByClient<Operation> = Operation extends { parameters: infer Parameters extends { header: object } }
  ? 'Idempotency-Key' extends keyof Parameters['header']
    ? Omit<Operation, 'parameters'> & {
        parameters: Omit<Parameters, 'header'> & { header?: Omit<Parameters['header'], 'Idempotency-Key'> & { 'Idempotency-Key'?: string } };
      }
    : Operation
  : Operation;

/** The spec's paths as the client takes them: the same, except that `Idempotency-Key` may be left to the client. */
export type ClientPaths = {
  [Path in keyof paths]: { [Key in keyof paths[Path]]: Key extends HttpMethod ? KeyMadeByClient<paths[Path][Key]> : paths[Path][Key] };
};

type GetOf<Path extends keyof ClientPaths> = ClientPaths[Path] extends { get: infer Operation } ? Operation : never;
type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never;

/** The keyset-paged lists: GET operations that take `cursor`. */
export type PagedPath = {
  [Path in keyof ClientPaths]: [QueryOf<GetOf<Path>>] extends [never] ? never : 'cursor' extends keyof QueryOf<GetOf<Path>> ? Path : never;
}[keyof ClientPaths];

/** One page of a paged list, as its 200 answer carries it. */
export type PageOf<Path extends PagedPath> = GetOf<Path> extends { responses: { 200: { content: { 'application/json': infer Page } } } } ? Page : never;

/** An item of a paged list. */
export type ItemOf<Path extends PagedPath> = PageOf<Path> extends { data: ReadonlyArray<infer Item> } ? Item : never;

/** What a paged list is called with: its path parameters and filters; the iterator adds `cursor`. */
export type PageRequest<Path extends PagedPath> = {
  params: Omit<NonNullable<GetOf<Path> extends { parameters: infer Parameters } ? Parameters : never>, 'query'> & {
    query?: Omit<QueryOf<GetOf<Path>>, 'cursor'>;
  };
};
