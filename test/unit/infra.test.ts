import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Language, Node, Parser } from 'web-tree-sitter';
import { loadConfig, settingsSchema } from '../../shared/config';
import { HOST_NODE_FLAGS } from '../../shared/local/nodeFlags';
import { QUEUES } from '../../shared/queue/storageQueue';
import { TABLES } from '../../shared/store/tableStorage';

/**
 * Offline checks of the deployment templates: the Bicep CLI cannot be installed here, so a Bicep grammar
 * (tree-sitter-bicep, WebAssembly) checks the syntax, and the tests below hold the invariants the app
 * relies on. `az bicep build` / what-if belong to a pipeline with network access.
 */

const ROOT = join(__dirname, '..', '..');
const INFRA = join(ROOT, 'infra');
const read = (name: string) => readFileSync(join(INFRA, name), 'utf8');
const bicepFiles = readdirSync(INFRA).filter((f) => f.endsWith('.bicep'));
const app = read('app.bicep');
const main = read('main.bicep');

let parser: Parser;
beforeAll(async () => {
  await Parser.init();
  parser = new Parser();
  parser.setLanguage(await Language.load(join(ROOT, 'node_modules', 'tree-sitter-bicep', 'tree-sitter-bicep.wasm')));
});

/** Syntax errors as `line:column kind`, from the ERROR and MISSING nodes of the parse tree. */
function syntaxErrors(text: string): string[] {
  const tree = parser.parse(text);
  if (!tree) throw new Error('the parser returned no tree');
  const errors: string[] = [];
  const visit = (node: Node) => {
    if (node.type === 'ERROR' || node.isMissing)
      errors.push(`${node.startPosition.row + 1}:${node.startPosition.column + 1} ${node.isMissing ? `missing ${node.type}` : 'syntax error'}`);
    for (const child of node.children) if (child) visit(child);
  };
  visit(tree.rootNode);
  return errors;
}

describe('Bicep syntax', () => {
  it('has the templates', () => {
    expect(bicepFiles.sort()).toEqual(['app.bicep', 'main.bicep']);
  });
  it.each(bicepFiles)('%s parses without a syntax error', (file) => {
    expect(syntaxErrors(read(file))).toEqual([]);
  });
  it('the check can fail: a broken template is caught', () => {
    expect(syntaxErrors("resource x 'Microsoft.Storage/storageAccounts@2023-05-01' = {\n  name: 'a'\n  properties: {\n")).not.toEqual([]);
    expect(syntaxErrors('param location string =\nvar x = [1, 2\n')).not.toEqual([]);
  });
});

/** `{ name: 'X', value: ... }` entries of the function app's appSettings. */
const appSettings = new Map([...app.matchAll(/\{ name: '([A-Za-z_]+)', value: (.+) \}/g)].map((m) => [m[1], m[2]]));
const literalArray = (name: string) => {
  const match = new RegExp(`var ${name} = \\[([^\\]]*)\\]`).exec(app);
  return match ? [...match[1].matchAll(/'([^']+)'/g)].map((m) => m[1]) : [];
};

describe('template invariants', () => {
  it('uses no account keys anywhere', () => {
    for (const file of bicepFiles) {
      const text = read(file);
      expect(text).not.toMatch(/listKeys\s*\(/i);
      expect(text).not.toMatch(/AccountKey/i);
      expect(text).not.toMatch(/listConnectionStrings|InstrumentationKey=/i);
    }
    expect(appSettings.has('AzureWebJobsStorage')).toBe(false);
  });
  it('turns shared keys and telemetry local auth off, and uses no registry modules', () => {
    expect(app).toMatch(/allowSharedKeyAccess: false/);
    expect(app).toMatch(/DisableLocalAuth: true/);
    expect(app).toMatch(/enableRbacAuthorization: true/);
    for (const file of bicepFiles) expect(read(file)).not.toMatch(/'br[:/]/);
  });
  it('creates every queue (with its -poison queue) and table the code uses', () => {
    expect(literalArray('queueNames').sort()).toEqual(Object.values(QUEUES).sort());
    expect(app).toMatch(/concat\(queueNames, map\(queueNames, q => '\$\{q\}-poison'\)\)/);
    expect(literalArray('tableNames').sort()).toEqual(Object.values(TABLES).sort());
  });
  it.each([
    ['storageBlobDataOwner', 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b', 'storage'],
    ['storageQueueDataContributor', '974c5e8b-45b9-4653-ba55-5f855dd0fb88', 'storage'],
    ['storageTableDataContributor', '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3', 'storage'],
    ['monitoringMetricsPublisher', '3913510d-42f4-4e42-8a64-420c390055eb', 'insights'],
    ['keyVaultSecretsUser', '4633458b-17de-408a-b874-0445c86b69e6', 'vault'],
  ])('grants the identity %s on %s', (role, guid, scope) => {
    expect(app).toContain(`${role}: '${guid}'`);
    const assignment = new RegExp(
      `scope: ${scope}\\s+properties: \\{\\s+roleDefinitionId: subscriptionResourceId\\('Microsoft.Authorization/roleDefinitions', roles\\.${role}\\)\\s+principalId: identity\\.properties\\.principalId`,
    );
    expect(app).toMatch(assignment);
  });
  it('sets only settings the code or the Functions host reads', () => {
    const known = new Set([...Object.keys(settingsSchema.shape), 'AzureWebJobsStorage__blobServiceUri', 'languageWorkers__node__arguments']);
    expect([...appSettings.keys()].filter((name) => !known.has(name))).toEqual([]);
  });
  it('takes every secret from Key Vault, never as a literal', () => {
    for (const secret of ['ADMIN_TOKEN', 'REPORTER_SIGNING_KEY', 'ALERTMANAGER_TOKEN', 'AZURE_MONITOR_TOKEN', 'KARMADA_KUBECONFIG', 'MEMBER_KUBECONFIGS']) {
      expect(appSettings.get(secret)).toMatch(/^'@Microsoft\.KeyVault\(SecretUri=\$\{\w+\.properties\.secretUri\}\)'$/);
    }
    expect(app).toMatch(/keyVaultReferenceIdentity: identity\.id/);
    for (const param of ['adminToken', 'reporterSigningKey', 'alertmanagerToken', 'azureMonitorToken', 'karmadaKubeconfig', 'memberKubeconfigs']) {
      expect(main).toMatch(new RegExp(`@secure\\(\\)\\n(@[^\\n]+\\n)*param ${param} string( = '')?\\n`));
      for (const file of bicepFiles) expect(read(file)).not.toMatch(new RegExp(`output .*${param}`));
    }
  });
  it('gives the app a configuration that starts: required auth with every secret, identity storage', () => {
    // Key Vault references resolve to the secret; any 16+ character stand-in will do here.
    const literal = (value: string) => /^'[^']*'$/.test(value) && !value.includes('${');
    const env = Object.fromEntries(
      [...appSettings.entries()].map(([name, value]) => [
        name,
        value.includes('@Microsoft.KeyVault') ? 'x'.repeat(32) : literal(value) ? value.slice(1, -1) : sample(name),
      ]),
    );
    const config = loadConfig(env);
    expect(config.auth.mode).toBe('required');
    expect([config.auth.adminToken, config.auth.signingKey, config.auth.alertmanagerToken, config.auth.azureMonitorToken].every(Boolean)).toBe(true);
    expect(config.storageConnectionString).toBeUndefined();
    expect(config.identityStorage).toMatchObject({
      queueServiceUri: 'https://stfailover.queue.core.windows.net/',
      clientId: '00000000-0000-0000-0000-000000000000',
    });
  });
  it('maps every parameter without a default in main.parameters.json', () => {
    const parameters = JSON.parse(read('main.parameters.json')).parameters as Record<string, { value: string }>;
    const required = [...main.matchAll(/^param (\w+) \w+$/gm)].map((m) => m[1]);
    expect(required.filter((p) => !(p in parameters))).toEqual([]);
    expect(Object.keys(parameters).filter((p) => !new RegExp(`^param ${p} `, 'm').test(main))).toEqual([]);
    for (const secret of ['adminToken', 'reporterSigningKey', 'alertmanagerToken', 'azureMonitorToken'])
      expect(parameters[secret].value).toMatch(/^\$\{[A-Z_]+\}$/);
  });
  it('alerts on the fleet tier, poison messages and eviction failures, using the metric names the code exports', () => {
    expect([...app.matchAll(/name: '([a-z-]+)'\n\s+description:/g)].map((m) => m[1])).toEqual([
      'fleet-tier-not-primary',
      'poison-messages',
      'eviction-failures',
    ]);
    expect(app).toContain('name == "cluster_failure_rate"');
    expect(app).toContain('name == "eviction_processing_total" and tostring(customDimensions.result) == "error"');
  });
  it('runs the Node worker with the V8 flags `npm start` and the test hosts use', () => {
    const flags = HOST_NODE_FLAGS.join(' ');
    expect(appSettings.get('languageWorkers__node__arguments')).toBe(`'${flags}'`);
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.start).toBe(`node ${flags} --import tsx shared/local/main.ts`);
  });
  it('azure.yaml deploys the function app from infra/', () => {
    const azd = readFileSync(join(ROOT, 'azure.yaml'), 'utf8');
    expect(azd).toMatch(/host: function/);
    expect(azd).toMatch(/path: infra/);
    expect(app).toContain("'azd-service-name': 'api'");
  });
});

/** Stand-ins for values the deployment computes. */
function sample(name: string): string {
  if (name === 'AzureWebJobsStorage__clientId') return '00000000-0000-0000-0000-000000000000';
  if (name === 'AzureWebJobsStorage__accountName') return 'stfailover';
  if (name.endsWith('ServiceUri'))
    return `https://stfailover.${name.includes('queue') ? 'queue' : name.includes('table') ? 'table' : 'blob'}.core.windows.net/`;
  if (name === 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING') return 'ClientId=00000000-0000-0000-0000-000000000000;Authorization=AAD';
  if (name === 'APPLICATIONINSIGHTS_CONNECTION_STRING')
    return 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://example.invalid/';
  if (name === 'FAILOVER_ENABLED') return 'false';
  if (name === 'RESOURCE_EVICTION_RATE') return '0.5';
  if (name === 'UNHEALTHY_CLUSTER_THRESHOLD') return '0.55';
  return 'value';
}
