/**
 * Every code sample of the reference, run. First the request each operation's samples are written
 * from (the spec's own examples) is sent to the service over a store filled as `pnpm start` fills
 * the demo store, and must get a status its operation documents; store operations must succeed:
 * the store and token are the test's (as a reader's are theirs), and a record id of the example
 * that is not in the store is replaced by one that is (the first of the store's that fits). Then
 * the samples themselves, in curl, TypeScript, Python, PHP and Go, are run against a listening
 * server, each language over a store of its own filled the same way, with the ids the first pass
 * found: each must get the answer the first pass got. A language whose toolchain is missing is
 * skipped and named at the end of the run (CI installs them all and sets REQUIRE_SAMPLE_LANGUAGES).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { bundledSpecPath } from '@svc/contract/node';
import request from 'supertest';
import type { OpenApiDocument } from '../../../tools/codegen/bundle';
import {
  curlSample,
  type GoSample,
  goRunner,
  goSampleParts,
  phpSample,
  pythonSample,
  type SampleLanguage,
  typeScriptSample,
} from '../../../tools/codegen/sample-code';
import { filledPath, SAMPLE_VARIABLES, type SampleRequest, samplePath, sampleRequests } from '../../../tools/codegen/samples';
import { repositoryRoot } from '../../../tools/testbed/repository';
import { replayEvents } from '../src/domain/webhooks/replay';
import { createSubscription } from '../src/domain/webhooks/subscriptions/changes';
import { findInstallationOf } from '../src/platform/installations';
import { ALL_SCOPES } from '../src/platform/scopes';
import { seedDemoCatalog } from '../src/seeds/demo-catalog';
import { simulateStore } from '../src/seeds/simulation/run';
import { plainEnvironment } from './support/app-project';
import { testDatabases } from './support/databases';
import { createTestStore, fullAccess, type SuiteHarness, suiteHarness } from './support/harness';
import { type Listening, listen } from './support/listen';
import { answersByMarker, MARKER_PATH, type RecordedAnswer, type RecordingProxy, recordingProxy } from './support/recording-proxy';
import { describeWith, type Toolchain, toolchain } from './support/requirements';

const run = promisify(execFile);
const document = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as OpenApiDocument;
/** The table's order with deletes last, as a reader tries them: a sample must not find its record deleted by another. */
const inReadingOrder = sampleRequests(document).sort((a, b) => Number(a.operation.method === 'delete') - Number(b.operation.method === 'delete'));
/** The OAuth operations that answer a token no server issued with a success. */
const UNKNOWN_TOKEN_SUCCEEDS = new Set(['oauth.revoke', 'oauth.introspect']);
/** How many of a collection's records a sample may try before one fits it. */
const CANDIDATES = 10;

const DAY_MS = 86_400_000;
/** After the analytics examples' range (October 2026), so their report covers simulated days. */
const NOW = Date.parse('2026-11-20T09:00:00Z');

const documentedStatuses = ({ operation }: SampleRequest): number[] =>
  Object.keys((document.paths[operation.path]?.[operation.method] as { responses?: Record<string, unknown> } | undefined)?.responses ?? {})
    .filter((status) => /^\d{3}$/.test(status))
    .map(Number);

type Parameter = { name?: string; $ref?: string };
/** Whether the list at this route takes a `limit` (its parameters, `$ref`s to components resolved). */
function takesLimit(route: string): boolean {
  const list = (document.paths[route] as { get?: { parameters?: Parameter[] } } | undefined)?.get;
  const components = (document as { components?: { parameters?: Record<string, Parameter> } }).components?.parameters ?? {};
  const resolved = (parameter: Parameter) => (parameter.$ref ? components[parameter.$ref.split('/').pop() ?? ''] : parameter);
  return (list?.parameters ?? []).some((parameter) => resolved(parameter)?.name === 'limit');
}

/** The collection a path's `{id}` names (products for `…/products/{id}/content`). */
const collectionOf = (route: string) => route.slice(0, route.indexOf('/{id}'));
const namesARecord = (sample: SampleRequest) => sample.operation.path.includes('/{id}') && sample.operation.auth === 'bearer';

/** A store filled as the demo is, with the reader's app installed and subscribed; its records of each collection, listed before any sample runs. */
interface SampleStore {
  readonly storeId: string;
  readonly accessToken: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly clientBasic: string;
  /** Per collection, the first records of its list, in its order. */
  readonly candidates: ReadonlyMap<string, readonly string[]>;
  /** Per webhook subscription, an event of its delivery log. */
  readonly loggedEvents: ReadonlyMap<string, string>;
}

async function fillStore(h: SuiteHarness, name: string): Promise<SampleStore> {
  h.clock.set(NOW - 400 * DAY_MS);
  const fixture = await createTestStore(h, name);
  const storeId = fixture.store.id;
  await seedDemoCatalog(h.services, storeId);
  h.clock.set(NOW);
  await simulateStore(h.services, { storeId, days: 60, orders: 120, seed: 13 });
  const access = await fullAccess(h, fixture);
  const accessToken = access.tokens.access_token;
  // The reader's app subscribed, with the last week's orders queued to it (a replay): the delivery log's samples read them.
  const installationId = (await findInstallationOf(h.db, storeId, access.client.app.id))?.id as string;
  const subscriber = { storeId, installationId, scopes: new Set<string>(ALL_SCOPES), now: h.clock.now() };
  const subscribed = await createSubscription(h.db, h.services, subscriber, {
    endpoint_url: 'https://app.example.com/webhooks/store-events',
    event_types: ['order.created', 'order.paid'],
  });
  const replayed = await replayEvents(h.db, subscriber, subscribed.row.id, { from: new Date(NOW - 7 * DAY_MS).toISOString(), to: new Date(NOW).toISOString() });
  expect(replayed.events_count).toBeGreaterThan(0);

  // A page of the store's own (the demo has none): the page samples read, publish, update and delete it.
  const page = await request(h.app)
    .post(`/stores/${storeId}/v1/pages`)
    .set('Authorization', `Bearer ${accessToken}`)
    .set('Idempotency-Key', randomUUID())
    .send({ title: 'Returns', body: '<p>Within 14 days.</p>' });
  expect(page.status).toBe(201);

  const read = (url: string) => request(h.app).get(url).set('Authorization', `Bearer ${accessToken}`);
  const candidates = new Map<string, string[]>();
  for (const collection of new Set(inReadingOrder.filter(namesARecord).map((sample) => collectionOf(sample.operation.path)))) {
    // An unpaged list (webhook subscriptions) refuses a `limit` it does not know.
    const page = await read(collection.replace('{storeId}', storeId)).query(takesLimit(collection) ? { limit: CANDIDATES } : {});
    candidates.set(
      collection,
      ((page.body as { data?: Array<{ id: number | string }> }).data ?? []).slice(0, CANDIDATES).map((record) => String(record.id)),
    );
  }
  const loggedEvents = new Map<string, string>();
  for (const subscription of candidates.get('/stores/{storeId}/v1/webhook-subscriptions') ?? []) {
    const log = await read(`/stores/${storeId}/v1/webhook-subscriptions/${subscription}/deliveries?limit=1`);
    const eventId = (log.body as { data?: Array<{ event_id: string }> }).data?.[0]?.event_id;
    if (eventId) loggedEvents.set(subscription, eventId);
  }
  return {
    storeId,
    accessToken,
    clientId: access.client.app.id,
    clientSecret: access.client.clientSecret,
    clientBasic: access.client.basic,
    candidates,
    loggedEvents,
  };
}

/** The sample's request on the store: its candidate records in order (the example itself when it names none). */
function attemptsOn(sample: SampleRequest, store: SampleStore): SampleRequest[] {
  const ids = namesARecord(sample) ? (store.candidates.get(collectionOf(sample.operation.path)) ?? []) : [];
  if (ids.length === 0) return [sample];
  return ids.map((id) => {
    const eventId = sample.operation.path.includes('{eventId}') ? store.loggedEvents.get(id) : undefined;
    return { ...sample, pathParameters: { ...sample.pathParameters, id, ...(eventId ? { eventId } : {}) } };
  });
}

/**
 * What an operation's sample must be answered: a status its operation documents; on a store
 * operation or a probe, its success; an OAuth sample carries example codes and tokens that no
 * server issued, and is refused in the interface's format, except at revocation and
 * introspection, where an unknown token is a success (RFC 7009 §2.2; RFC 7662: `{"active": false}`).
 */
function answerProblems(sample: SampleRequest, status: number, code: string | undefined): string[] {
  const { operation } = sample;
  const problems = documentedStatuses(sample).includes(status) ? [] : [`answered ${status}, which ${operation.operationId} does not document`];
  const mustSucceed = operation.auth === 'bearer' || !operation.path.startsWith('/oauth/') || UNKNOWN_TOKEN_SUCCEEDS.has(operation.operationId);
  if (mustSucceed && status !== operation.successStatus) problems.push(`answered ${status} ${code ?? ''}, not its success ${operation.successStatus}`);
  if (!mustSucceed && code === undefined) problems.push(`answered ${status} without an error code in the interface's format`);
  return problems;
}

/** Per operation, which of its candidate records fits it (its index), found by the first pass on SQLite: each language's store is filled the same way. */
const fitting = new Map<string, number>();

// ---------------------------------------------------------------- the samples themselves

/** One sample to run: the operation's request on the language's store, and the name its answers are filed under. */
interface Planned {
  readonly name: string;
  readonly sample: SampleRequest;
}

/** What a language's run of its samples left: per sample, the answers it got and what it printed when it failed. */
type Outcomes = Map<string, { answers: RecordedAnswer[]; failure?: string }>;

/**
 * A language: its toolchain, and how one program of it runs every sample in turn, marking each at
 * the proxy first (`GET /__sample__/<name>`) so that the answers can be told apart, and printing
 * `<name>: …` on stderr for a sample that fails, before going on to the next. One program per
 * language: a process (or a Go build) per sample costs a second each on a busy machine.
 */
interface Language {
  readonly name: SampleLanguage;
  readonly toolchain: Toolchain;
  /** Writes the samples and the runner into `dir`; answers the command line that runs them (after `build`, when there is one). */
  prepare(planned: readonly Planned[], dir: string): { build?: readonly string[]; run: readonly string[] };
}

/** Runs one program to its end; answers what it printed on stderr, and how it ended when that was not well. */
async function runProgram(command: string, args: readonly string[], options: { cwd: string; env: Record<string, string> }): Promise<string> {
  try {
    const { stderr } = await run(command, [...args], { ...options, timeout: 180_000, maxBuffer: 64 * 1024 * 1024 });
    return stderr;
  } catch (error) {
    const failure = error as { code?: number | string; stdout?: string; stderr?: string };
    return `exited ${failure.code}: ${failure.stderr ?? ''}${(failure.stdout ?? '').slice(-2000)}`;
  }
}

/** The outcomes of a runner: the answers after each sample's marker, and what it printed of each. */
function outcomesOfRunner(planned: readonly Planned[], answers: readonly RecordedAnswer[], printed: string): Outcomes {
  const byMarker = answersByMarker(answers);
  return new Map(
    planned.map(({ name }) => {
      const mentions = printed
        .split('\n')
        .filter((line) => line.startsWith(`${name}:`) || line.startsWith(`${name} `))
        .join('\n');
      const failure = !byMarker.has(name) ? `never ran:\n${printed.slice(-2000)}` : mentions || undefined;
      return [name, { answers: byMarker.get(name) ?? [], ...(failure ? { failure } : {}) }];
    }),
  );
}

const write = (dir: string, file: string, text: string) => fs.writeFileSync(path.join(dir, file), text.endsWith('\n') ? text : `${text}\n`);
const namesOf = (planned: readonly Planned[]) => planned.map(({ name }) => name);

/** curl: one bash script, each sample in a subshell of its own with `set -euo pipefail`, as a reader's terminal would run it. */
function curlLanguage(toolchainOf: Toolchain): Language {
  return {
    name: 'curl',
    toolchain: toolchainOf,
    prepare(planned, dir) {
      const parts = planned.map(({ name, sample }) =>
        [
          `curl -s -o /dev/null "$SVC_URL${MARKER_PATH}${name}"`,
          '(',
          'set -euo pipefail',
          curlSample(sample),
          ')',
          'status=$?',
          `if [ "$status" -ne 0 ]; then echo "${name}: exited $status" >&2; fi`,
        ].join('\n'),
      );
      write(dir, 'samples.sh', parts.join('\n\n'));
      return { run: [toolchainOf.command, 'samples.sh'] };
    },
  };
}

/** Python: each sample a file, run in turn by one interpreter (`runpy`, as `python3 sample.py` runs it). */
function pythonLanguage(toolchainOf: Toolchain): Language {
  return {
    name: 'Python',
    toolchain: toolchainOf,
    prepare(planned, dir) {
      for (const { name, sample } of planned) write(dir, `${name}.py`, pythonSample(sample));
      write(
        dir,
        'runner.py',
        `import os
import runpy
import sys
import urllib.request

for name in ${JSON.stringify(namesOf(planned))}:
    urllib.request.urlopen(os.environ["SVC_URL"] + "${MARKER_PATH}" + name).close()
    try:
        runpy.run_path(name + ".py", run_name="__main__")
    except SystemExit as ended:
        if ended.code not in (None, 0):
            print(f"{name}: exited {ended.code}", file=sys.stderr)
    except Exception as error:
        print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
`,
      );
      return { run: [toolchainOf.command, 'runner.py'] };
    },
  };
}

/** PHP: each sample a file, required in turn by one process, each in a function scope of its own. */
function phpLanguage(toolchainOf: Toolchain): Language {
  return {
    name: 'PHP',
    toolchain: toolchainOf,
    prepare(planned, dir) {
      for (const { name, sample } of planned) write(dir, `${name}.php`, phpSample(sample));
      write(
        dir,
        'runner.php',
        `<?php
foreach (${JSON.stringify(namesOf(planned)).replace(/"/g, "'")} as $name) {
    $marker = curl_init(getenv('SVC_URL') . '${MARKER_PATH}' . $name);
    curl_setopt($marker, CURLOPT_RETURNTRANSFER, true);
    curl_exec($marker);
    try {
        (function () use ($name) {
            require __DIR__ . "/$name.php";
        })();
    } catch (Throwable $error) {
        fwrite(STDERR, "$name: " . get_class($error) . ': ' . $error->getMessage() . PHP_EOL);
    }
}
`,
      );
      return { run: [toolchainOf.command, 'runner.php'] };
    },
  };
}

const TSX = path.join(repositoryRoot, 'node_modules', '.bin', 'tsx');

/**
 * TypeScript: every sample a module, imported in turn by one tsx process; `@svc/client` is the
 * workspace's, as the reference's samples are compiled against it (tools/codegen/test/samples.test.ts).
 * A sample that throws (the SDK's StoreApiError for a refusal) is printed under its name.
 */
const typeScriptLanguage: Language = {
  name: 'TypeScript',
  toolchain: { command: TSX, missing: undefined, howToRun: '', requiredBy: 'REQUIRE_SAMPLE_LANGUAGES' },
  prepare(planned, dir) {
    const source = (name: string) => path.join(repositoryRoot, 'packages', name, 'src', 'index.ts');
    const compilerOptions = {
      module: 'ESNext',
      moduleResolution: 'Bundler',
      target: 'ES2022',
      paths: { '@svc/client': [source('client')], '@svc/contract': [source('contract')] },
    };
    write(dir, 'tsconfig.json', JSON.stringify({ compilerOptions }));
    for (const { name, sample } of planned) write(dir, `${name}.mts`, typeScriptSample(sample));
    write(
      dir,
      'runner.mts',
      `for (const name of ${JSON.stringify(namesOf(planned))}) {
  await fetch(\`\${process.env.SVC_URL}${MARKER_PATH}\${name}\`);
  try {
    await import(\`./\${name}.mts\`);
  } catch (error) {
    console.error(\`\${name}: \${error instanceof Error ? \`\${error.name}: \${error.message}\` : String(error)}\`);
  }
}
`,
    );
    return { run: [TSX, 'runner.mts'] };
  },
};

/** Go: one program whose functions are the samples' \`main\` bodies, built once (a build per sample costs a second) and run. */
function goLanguage(toolchainOf: Toolchain): Language {
  return {
    name: 'Go',
    toolchain: toolchainOf,
    prepare(planned, dir) {
      const samples: Array<{ name: string; sample: GoSample }> = planned.map(({ name, sample }) => ({ name, sample: goSampleParts(sample) }));
      const marker = (variable: string) =>
        `if marker, err := http.Get(os.Getenv("${SAMPLE_VARIABLES.baseUrl}") + "${MARKER_PATH}" + ${variable}); err == nil {\n\tmarker.Body.Close()\n}`;
      write(dir, 'go.mod', 'module samples\n\ngo 1.19');
      write(dir, 'main.go', goRunner(samples, marker));
      return { build: [toolchainOf.command, 'build', '-o', 'samples', '.'], run: [path.join(dir, 'samples')] };
    },
  };
}

const LANGUAGES: readonly Language[] = [
  curlLanguage(toolchain({ variable: 'SAMPLE_BASH', command: 'bash', name: 'bash', check: ['-c', 'command -v curl'], needs: 'curl', packages: 'curl' })),
  typeScriptLanguage,
  pythonLanguage(
    toolchain({
      variable: 'SAMPLE_PYTHON',
      command: 'python3',
      name: 'Python',
      check: ['-c', 'import requests'],
      needs: 'requests package',
      packages: 'python3 and python3-requests',
    }),
  ),
  phpLanguage(
    toolchain({
      variable: 'SAMPLE_PHP',
      command: 'php',
      name: 'PHP',
      check: ['-r', 'exit(function_exists("curl_init") ? 0 : 1);'],
      needs: 'curl extension',
      packages: 'php-cli and php-curl',
    }),
  ),
  goLanguage(toolchain({ variable: 'SAMPLE_GO', command: 'go', name: 'Go', check: ['version'], needs: 'working go command', packages: 'golang-go' })),
];

/** Builds (when the language does) and runs a language's samples with the reader's environment; answers each sample's outcome. */
async function runLanguage(
  language: Language,
  planned: readonly Planned[],
  dir: string,
  env: Record<string, string>,
  proxy: RecordingProxy,
): Promise<Outcomes> {
  const { build, run: command } = language.prepare(planned, dir);
  const [program = '', ...args] = command;
  if (build) {
    const [builder = '', ...buildArgs] = build;
    const built = await runProgram(builder, buildArgs, { cwd: dir, env: { ...env, GOFLAGS: '-mod=mod' } });
    if (/^exited /.test(built)) return new Map(planned.map(({ name }) => [name, { answers: [], failure: `the program did not build: ${built}` }]));
  }
  proxy.take();
  const printed = await runProgram(program, args, { cwd: dir, env });
  return outcomesOfRunner(planned, proxy.take(), printed);
}

/**
 * The samples themselves, each language against the harness's app listening on a port (the same
 * app as the first pass, whose validators are compiled by then), over a store of its own.
 */
function describeSamplesInFiveLanguages(h: SuiteHarness): void {
  describe('the code samples in five languages, run against a listening server', () => {
    let server: Listening;

    beforeAll(async () => {
      server = await listen(h.app);
      h.atEnd(() => server.close());
    });

    for (const language of LANGUAGES) {
      describeWith(language.toolchain, `the ${language.name} samples`, () => {
        let outcomes: Outcomes = new Map();
        let planned: Planned[] = [];
        let dir = '';

        beforeAll(async () => {
          const store = await fillStore(h, `Oud House (${language.name})`);
          planned = inReadingOrder.map((sample) => {
            const attempts = attemptsOn(sample, store);
            return { name: sample.operation.operationId.replace(/\W/g, '_'), sample: attempts[fitting.get(sample.operation.operationId) ?? 0] ?? sample };
          });
          dir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-samples-${language.name.toLowerCase()}-`));
          const proxy = await recordingProxy(server.origin);
          try {
            const env = {
              ...plainEnvironment(),
              [SAMPLE_VARIABLES.baseUrl]: proxy.origin,
              [SAMPLE_VARIABLES.storeId]: store.storeId,
              [SAMPLE_VARIABLES.accessToken]: store.accessToken,
              [SAMPLE_VARIABLES.clientId]: store.clientId,
              [SAMPLE_VARIABLES.clientSecret]: store.clientSecret,
            };
            outcomes = await runLanguage(language, planned, dir, env, proxy);
          } finally {
            await proxy.close();
          }
        }, 240_000);

        afterAll(() => {
          if (dir) fs.rmSync(dir, { recursive: true, force: true });
        });

        it.each(inReadingOrder.map((sample) => [sample.operation.operationId, sample] as const))('%s runs and gets its answer', (_, sample) => {
          const { name } = planned.find((entry) => entry.sample.operation === sample.operation) as Planned;
          const outcome = outcomes.get(name);
          const answer = outcome?.answers.at(-1);
          const sent = (outcome?.answers ?? []).map((recorded) => `${recorded.method} ${recorded.status}`);
          // The operation's request, after the read of the ETag an update needs.
          const expected = [...(sample.etagFrom ? ['GET 200'] : []), `${sample.operation.method.toUpperCase()} ${answer?.status}`];
          const problems = [
            ...(answer ? answerProblems(sample, answer.status, answer.code) : ['sent nothing']),
            ...(answer && sent.join() !== expected.join() ? [`sent ${sent.join(', ')}`] : []),
          ];
          // A sample that throws on a refusal it is meant to get (the SDK does) is not a failure; any other way of failing is.
          const failed = outcome?.failure !== undefined && (problems.length > 0 || language.name !== 'TypeScript' || !/StoreApiError/.test(outcome.failure));
          expect({ problems, failure: failed ? outcome?.failure : undefined }).toEqual({ problems: [], failure: undefined });
        });
      });
    }
  });
}

describe.each(testDatabases())('the code samples on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: SampleStore;

  beforeAll(async () => {
    store = await fillStore(h, 'Oud House');
  }, 120_000);

  /** The current ETag of what an update changes, read as its samples read it. */
  async function currentEtag(sample: SampleRequest): Promise<string> {
    const read = await request(h.app)
      .get(filledPath(sample, sample.etagFrom).replace(`$${SAMPLE_VARIABLES.storeId}`, store.storeId))
      .set('Authorization', `Bearer ${store.accessToken}`);
    expect(read.headers.etag).toEqual(expect.any(String));
    return read.headers.etag as string;
  }

  async function send(sample: SampleRequest): Promise<request.Response> {
    const { operation } = sample;
    let call = request(h.app)[operation.method](samplePath(sample).replace(`$${SAMPLE_VARIABLES.storeId}`, store.storeId));
    if (operation.auth === 'bearer') call = call.set('Authorization', `Bearer ${store.accessToken}`);
    if (operation.auth === 'client') call = call.set('Authorization', store.clientBasic);
    if (operation.requiresIdempotencyKey) call = call.set('Idempotency-Key', randomUUID());
    if (sample.etagFrom) call = call.set('If-Match', await currentEtag(sample));
    for (const [name, value] of Object.entries(sample.headers)) call = call.set(name, value);
    return sample.body === undefined ? call : call.send(sample.body as object);
  }

  it.each(inReadingOrder.map((sample) => [sample.operation.operationId, sample] as const))('%s answers a documented status', async (_, sample) => {
    const answers: Array<{ status: number; code?: string }> = [];
    const attempts = attemptsOn(sample, store);
    for (const attempt of attempts) {
      const response = await send(attempt);
      answers.push({ status: response.status, code: (response.body as { error?: { code?: string } }).error?.code });
      if (response.status === sample.operation.successStatus) break;
    }
    const last = answers.at(-1) ?? { status: 0 };
    if (testDatabase.name === 'sqlite') fitting.set(sample.operation.operationId, answers.length - 1);
    // Trying a record that does not fit (a digital product's stock) is a documented refusal too.
    for (const { status } of answers) expect(documentedStatuses(sample)).toContain(status);
    expect(answerProblems(sample, last.status, last.code)).toEqual([]);
  });

  // The samples in five languages on one database: they test the docs, and the service's answers on both are the first pass's.
  if (testDatabase.name === 'sqlite') describeSamplesInFiveLanguages(h);
});
