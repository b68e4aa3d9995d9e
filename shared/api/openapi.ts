import { z } from 'zod';
import { REQUEST_SCHEMAS, RESPONSE_SCHEMAS, Route, ROUTES, Security } from './contract/routes';

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the route list and the zod schemas (requests as
 * the decoders read them, responses as the views build them). Served at GET /api/openapi.json and written
 * to docs/reference/openapi.json by `npm run openapi`, which also generates the clients' types from it.
 */

type JsonObject = Record<string, unknown>;

const SCHEMA_REF = (name: string) => `#/components/schemas/${name}`;
const ref = (name: string) => ({ $ref: SCHEMA_REF(name) });

/**
 * Named schemas as JSON Schema 2020-12, each referring to the others by their component; `io` picks the
 * input side (what a request may send, defaults optional) or the output side (what an answer holds).
 */
function components(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, JsonObject> {
  const registry = z.registry<{ id: string }>();
  for (const [name, schema] of Object.entries(schemas)) registry.add(schema, { id: name });
  const { schemas: converted } = z.toJSONSchema(registry, { io, target: 'draft-2020-12', unrepresentable: 'any', uri: SCHEMA_REF });
  return Object.fromEntries(
    Object.entries(converted).map(([name, schema]) => {
      const { $schema: _schema, $id: _id, ...rest } = schema as JsonObject;
      // A schema nested in a component must not refer to $defs: they would resolve against the document root.
      if (JSON.stringify(rest).includes('"#/$defs/')) throw new Error(`schema ${name} refers to $defs; register the shared part as a component`);
      return [name, rest];
    }),
  );
}

/** One schema inline (parameters): no component of its own. */
function inline(schema: z.ZodType): JsonObject {
  const { $schema: _schema, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as JsonObject;
  return rest;
}

const ERROR_MEANINGS: Record<number, string> = {
  400: 'invalid input: each bad field named (path parameters, query, body)',
  401: 'a missing or wrong token or signature',
  403: 'a reporter signing for another cluster',
  404: 'no such object',
  409: 'a stale or replayed report, a lost race, or an object managed in Karmada (Karmada mode)',
  413: 'a body over MAX_REQUEST_BODY_BYTES, or an object too large to store',
  415: 'an unsupported Content-Type',
  503: 'the Karmada API server cannot be used, or what the route needs is not configured (Retry-After)',
};

const SECURITY: Record<Security, Array<Record<string, string[]>>> = {
  admin: [{ adminToken: [] }],
  clusterSignature: [{ clusterSignature: [], clusterSignatureTimestamp: [] }],
  alertmanager: [{ alertmanagerToken: [] }],
  azureMonitor: [{ azureMonitorToken: [] }],
};

/** The statuses a route may answer besides 200. */
export function errorStatuses(route: Route): number[] {
  const statuses = new Set(route.errors ?? []);
  if (route.params || route.query || route.body) statuses.add(400);
  if (route.security) statuses.add(401);
  if (route.body) [413, 415].forEach((s) => statuses.add(s));
  statuses.add(503);
  return [...statuses].sort((a, b) => a - b);
}

function okResponse(route: Route): JsonObject {
  if (typeof route.ok === 'object' && !Array.isArray(route.ok)) {
    return { description: 'OK', content: Object.fromEntries(route.ok.contentTypes.map((type) => [type, { schema: { type: 'string' } }])) };
  }
  const names = Array.isArray(route.ok) ? route.ok : [route.ok];
  const schema = names.length === 1 ? ref(names[0]) : { anyOf: names.map(ref) };
  return { description: 'OK', content: { 'application/json': { schema } } };
}

function operation(route: Route): JsonObject {
  const parameters = [
    ...Object.entries(route.params ?? {}).map(([name, schema]) => ({ name, in: 'path', required: true, schema: inline(schema) })),
    ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
      name,
      in: 'query',
      required: false,
      schema: inline((schema as z.ZodOptional).unwrap() as z.ZodType),
    })),
  ];
  const responses: JsonObject = { '200': okResponse(route) };
  for (const status of errorStatuses(route)) {
    const body = route.otherBodies?.[status] ?? 'Error';
    responses[String(status)] = { description: ERROR_MEANINGS[status] ?? 'an error', content: { 'application/json': { schema: ref(body) } } };
  }
  responses.default = { description: 'an unexpected error (500 without internals)', content: { 'application/json': { schema: ref('Error') } } };
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            // A body is JSON or YAML (several YAML documents for apply); no Content-Type reads as YAML.
            content: { 'application/json': { schema: ref(route.body) }, 'application/yaml': { schema: ref(route.body) } },
          },
        }
      : {}),
    security: route.security ? SECURITY[route.security] : [],
    responses,
  };
}

function checkRoutes(routes: readonly Route[]): void {
  const ids = new Set<string>();
  for (const route of routes) {
    if (ids.has(route.operationId)) throw new Error(`operationId ${route.operationId} is used twice`);
    ids.add(route.operationId);
    const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    const declared = Object.keys(route.params ?? {}).sort();
    if (inPath.join() !== declared.join()) throw new Error(`${route.method} ${route.path}: path parameters ${inPath.join()} but rules for ${declared.join()}`);
  }
}

let cached: JsonObject | undefined;

/** The document (built once per process: it depends only on the code). */
export function openApiDocument(): JsonObject {
  if (cached) return cached;
  checkRoutes(ROUTES);
  const paths: Record<string, JsonObject> = {};
  for (const route of ROUTES) (paths[route.path] ??= {})[route.method] = operation(route);
  const requests = components(REQUEST_SCHEMAS, 'input');
  const responses = components(RESPONSE_SCHEMAS, 'output');
  const clash = Object.keys(requests).filter((name) => Object.hasOwn(responses, name));
  if (clash.length > 0) throw new Error(`schema names used for both a request and a response: ${clash.join(', ')}`);
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'cluster-failover',
      version: '0.1.0',
      description:
        'The HTTP API of the cluster-failover control plane (docs/reference/http-api.md). Reads need no token; what changes state needs the admin token; health reports are signed by their cluster. With AUTH_MODE=none nothing is checked.',
    },
    servers: [{ url: '/api' }],
    tags: [...new Set(ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: { ...requests, ...responses },
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <ADMIN_TOKEN>' },
        clusterSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Failover-Signature',
          description:
            'sha256=<hex of HMAC-SHA256(cluster key, timestamp + "." + raw body)>; the cluster key is hex(HMAC-SHA256(REPORTER_SIGNING_KEY, cluster name)). X-Failover-Cluster may name the reporter.',
        },
        clusterSignatureTimestamp: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Failover-Timestamp',
          description: "unix seconds, within 300 s of the server's clock",
        },
        alertmanagerToken: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <ALERTMANAGER_TOKEN>' },
        azureMonitorToken: { type: 'apiKey', in: 'query', name: 'token', description: '?token=<AZURE_MONITOR_TOKEN>' },
      },
    },
  };
  return cached;
}
