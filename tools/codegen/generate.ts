/**
 * `pnpm generate`: spec/ → packages/contract (bundle, types, operation table, scope catalogue, event catalogue, date versions), the
 * server's handler types and registry, the client's types, stubs for operations without a handler,
 * docs/deploy.md's table of settings, the versions guide's table of date versions, and docs/site. The bundle also carries the guides (docs/guides/, CHANGELOG.md) and samples
 * in curl, TypeScript, Python, PHP and Go on every operation, which the docs site shows as tabs.
 * `pnpm generate:check`: fails when the committed generated files are out of step with spec/.
 * `pnpm docs`: rebuilds docs/site from the committed bundled spec only, and the SDK reference (TypeDoc) in docs/site/sdk.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleSpec, bundleText } from './bundle';
import { readReleasedDocuments, withChangelogDiffs } from './changelog-diffs';
import { buildDocsSite } from './docs-site';
import { clientTypes, contractOperations, contractScopes, contractTypes, handlerFileOf, handlerStub, serverRegistry } from './emit';
import { contractEvents, readEventCatalogue, readFieldScopes, withEventScopeTable } from './events';
import { readGuidePages, withGuides } from './guides';
import { buildOperationTable } from './operation-table';
import { locations, repoRoot } from './paths';
import { withCodeSamples } from './sample-code';
import { readScopeCatalogue, withScopeDependencyTable } from './scopes';
import { buildSdkReference } from './sdk-reference';
import { deployGuide, withSettingsTable } from './settings-table';
import { contractVersions, readVersionRegistry, withVersionsTable } from './versions';

async function generatedFiles(): Promise<{ files: Map<string, string>; table: ReturnType<typeof buildOperationTable> }> {
  const bundled = bundleSpec();
  const scopes = readScopeCatalogue(bundled);
  const events = readEventCatalogue(bundled, scopes);
  const versions = readVersionRegistry(String((bundled.info as { version?: unknown } | undefined)?.version));
  // The site shows the versions guide with the table as the registry has it, even before the file is written.
  const versionsGuide = withVersionsTable(fs.readFileSync(locations.versionsGuide, 'utf8'), versions);
  // Each version's entry opens with the gate's diff against the previous release.
  const changelog = withChangelogDiffs(fs.readFileSync(locations.changelog, 'utf8'), versions, readReleasedDocuments(versions));
  const document = withGuides(
    withCodeSamples(withEventScopeTable(withScopeDependencyTable(bundled, scopes), events)),
    readGuidePages(
      new Map([
        [locations.versionsGuide, versionsGuide],
        [locations.changelog, changelog],
      ]),
    ),
  );
  const table = buildOperationTable(document);
  const files = new Map<string, string>([
    [locations.bundledSpec, bundleText(document)],
    [locations.contractTypes, await contractTypes(document)],
    [locations.contractOperations, contractOperations(table)],
    [locations.contractScopes, contractScopes(scopes)],
    [locations.contractEvents, contractEvents(events, readFieldScopes(bundled, scopes))],
    [locations.contractVersions, contractVersions(versions)],
    [locations.serverRegistry, serverRegistry(table)],
    [locations.clientTypes, clientTypes(document)],
    // The deploy guide's table of settings, from the server's settings schema.
    [deployGuide, withSettingsTable(fs.readFileSync(deployGuide, 'utf8'))],
    // The versions guide's table, from spec/versions.yaml.
    [locations.versionsGuide, versionsGuide],
    // The changelog's diff of each version against the previous release, from spec/released/.
    [locations.changelog, changelog],
  ]);
  return { files, table };
}

const display = (file: string) => path.relative(repoRoot, file);

async function check(): Promise<number> {
  const { files, table } = await generatedFiles();
  const stale = [...files].filter(([file, content]) => !fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== content);
  const missingHandlers = table.map((e) => handlerFileOf(e.operationId)).filter((file) => !fs.existsSync(file));
  for (const [file] of stale) console.error(`out of step with spec/: ${display(file)}`);
  for (const file of missingHandlers) console.error(`no handler module: ${display(file)}`);
  if (stale.length + missingHandlers.length > 0) {
    console.error('Run `pnpm generate` and commit the result.');
    return 1;
  }
  console.log(`generated files are in step with spec/ (${table.length} operations)`);
  return 0;
}

async function generate(): Promise<number> {
  const { files, table } = await generatedFiles();
  for (const [file, content] of files) {
    if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === content) continue;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    console.log(`wrote ${display(file)}`);
  }
  for (const entry of table) {
    const file = handlerFileOf(entry.operationId);
    if (fs.existsSync(file)) continue;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, handlerStub(entry));
    console.log(`scaffolded ${display(file)} (answers 501 until built)`);
  }
  await docs();
  console.log(`${table.length} operations generated`);
  return 0;
}

async function docs(): Promise<number> {
  const { file, bytes } = buildDocsSite();
  console.log(`built ${display(file)} (${Math.round(bytes / 1024)} KiB, no external assets)`);
  const reference = await buildSdkReference();
  console.log(`built ${display(reference.dir)} (the SDK reference, ${reference.pages} pages)`);
  return 0;
}

async function main(): Promise<void> {
  const args = new Set(process.argv.slice(2));
  const run = args.has('--check') ? check : args.has('--only=docs') ? docs : generate;
  process.exitCode = await run();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
