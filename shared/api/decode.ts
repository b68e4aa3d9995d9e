import { LineCounter, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { templateNamespace } from '../failover/templates';
import { ApiError, badRequest, FieldError, toFieldErrors } from './errors';
import {
  APPLY_KINDS,
  ApplyKind,
  ClusterInput,
  ClusterPropagationPolicyInput,
  ClusterResourceBindingInput,
  ClusterTaintPolicyInput,
  FailoverBudgetInput,
  PropagationPolicyInput,
  ResourceBindingInput,
} from './resources';
import { closestName } from './suggest';
import { isOwnGroup, TemplateInput, templateSchema } from './templates';

const JSON_TYPES = new Set(['application/json', 'text/json']);
const YAML_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml']);
const MAX_DEPTH = 32;
// A bulk import of templates (10,000 Deployments and their policies) is one request; MAX_REQUEST_BODY_BYTES bounds its size.
const MAX_DOCUMENTS = 20_000;

/** What an HTTP body decoder needs from a request: the fetch-style subset of HttpRequest. */
export interface BodySource {
  headers: { get(name: string): string | null };
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Reads a request body's bytes, enforcing the size limit (413). */
export async function readBodyBytes(req: BodySource, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get('content-length') ?? '0');
  if (declared > maxBytes) throw new ApiError(413, `request body is ${declared} bytes; the limit is ${maxBytes} bytes`);
  const bytes = new Uint8Array(await req.arrayBuffer());
  if (bytes.byteLength > maxBytes) throw new ApiError(413, `request body is ${bytes.byteLength} bytes; the limit is ${maxBytes} bytes`);
  return bytes;
}

/** Reads a request body as UTF-8 text, enforcing the size limit (413) and the encoding (400). */
export async function readBodyText(req: BodySource, maxBytes: number): Promise<string> {
  return bodyText(await readBodyBytes(req, maxBytes));
}

/** A body's bytes as UTF-8 text; empty or invalid UTF-8 is a 400. */
export function bodyText(bytes: Uint8Array): string {
  if (bytes.byteLength === 0) throw badRequest([{ path: '', message: 'request body is empty' }], 'request body is empty');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest([{ path: '', message: 'request body is not valid UTF-8' }], 'request body is not valid UTF-8');
  }
}

type BodyFormat = 'json' | 'yaml';

/** JSON or YAML by Content-Type; no Content-Type is read as YAML, which also accepts JSON. */
export function bodyFormat(contentTypeHeader: string | null): BodyFormat {
  const type = (contentTypeHeader ?? '').split(';')[0].trim().toLowerCase();
  if (type === '') return 'yaml';
  if (JSON_TYPES.has(type) || type.endsWith('+json')) return 'json';
  if (YAML_TYPES.has(type) || type.endsWith('+yaml')) return 'yaml';
  throw new ApiError(415, `unsupported Content-Type "${type}"; send application/json or application/yaml`);
}

/** Parses one or more documents (YAML multi-document, or JSON) and checks nesting depth. */
export function parseDocuments(text: string, format: BodyFormat): unknown[] {
  let documents: unknown[];
  if (format === 'json') {
    try {
      documents = [JSON.parse(text)];
    } catch (error) {
      throw badRequest([{ path: '', message: `body is not valid JSON: ${(error as Error).message}` }], 'body is not valid JSON');
    }
  } else {
    const lines = new LineCounter();
    const parsed = parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true, lineCounter: lines });
    const list = Array.isArray(parsed) ? parsed : [parsed];
    const errors: FieldError[] = [];
    list.forEach((doc, index) => {
      for (const error of doc.errors) {
        const position = lines.linePos(error.pos[0]);
        const where = ` at line ${position.line}, column ${position.col}`;
        errors.push({ path: '', document: index, message: `body is not valid YAML${where}: ${error.message.split('\n')[0]}` });
      }
    });
    if (errors.length > 0) throw badRequest(errors, 'body is not valid YAML');
    documents = list
      .map((doc, index) => {
        try {
          return doc.toJS({ maxAliasCount: 50 }) as unknown;
        } catch (error) {
          // e.g. an alias to no anchor, or an alias bomb beyond maxAliasCount
          throw badRequest(
            [{ path: '', document: index, message: `body is not valid YAML: ${(error as Error).message.split('\n')[0]}` }],
            'body is not valid YAML',
          );
        }
      })
      .filter((value) => value !== null && value !== undefined);
  }
  documents.forEach((doc, index) => {
    if (depthOf(doc) > MAX_DEPTH) {
      throw badRequest([{ path: '', document: index, message: `nesting is deeper than ${MAX_DEPTH} levels` }], 'body is nested too deeply');
    }
  });
  return documents;
}

function depthOf(value: unknown, level = 0): number {
  if (level > MAX_DEPTH) return level;
  if (value === null || typeof value !== 'object') return level;
  let deepest = level + 1;
  for (const child of Object.values(value as Record<string, unknown>)) deepest = Math.max(deepest, depthOf(child, level + 1));
  return deepest;
}

/** Parses a single-object body (status reports and the like) against a schema. */
export function decodeSingle<S extends z.ZodType>(documents: unknown[], schema: S): z.infer<S> {
  if (documents.length !== 1) {
    throw badRequest([{ path: '', message: `expected exactly one document, got ${documents.length}` }]);
  }
  const parsed = schema.safeParse(documents[0], { reportInput: true });
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error));
  return parsed.data;
}

export type AppliedObject =
  | { kind: 'Cluster'; name: string; object: ClusterInput }
  | { kind: 'ClusterTaintPolicy'; name: string; object: ClusterTaintPolicyInput }
  | { kind: 'ResourceBinding'; name: string; object: ResourceBindingInput }
  | { kind: 'ClusterResourceBinding'; name: string; object: ClusterResourceBindingInput }
  | { kind: 'PropagationPolicy'; name: string; object: PropagationPolicyInput }
  | { kind: 'ClusterPropagationPolicy'; name: string; object: ClusterPropagationPolicyInput }
  | { kind: 'FailoverBudget'; name: string; object: FailoverBudgetInput }
  /** Any other Kubernetes object: a resource template (Deployment, ConfigMap, a custom resource...). */
  | { kind: 'ResourceTemplate'; name: string; object: TemplateInput };

/**
 * Decodes the objects of POST /api/apply: YAML documents, a JSON object or array, or a `kind: List`.
 * Every object is validated before anything is stored; all errors are reported at once.
 */
export function decodeApplyDocuments(documents: unknown[]): AppliedObject[] {
  const flat = documents.flatMap((doc): unknown[] => {
    if (Array.isArray(doc)) return doc as unknown[];
    if (isRecord(doc) && doc.kind === 'List' && Array.isArray(doc.items)) return doc.items as unknown[];
    return [doc];
  });
  if (flat.length === 0) throw badRequest([{ path: '', message: 'no objects to apply' }]);
  if (flat.length > MAX_DOCUMENTS) throw badRequest([{ path: '', message: `at most ${MAX_DOCUMENTS} objects per request, got ${flat.length}` }]);
  const errors: FieldError[] = [];
  const objects: AppliedObject[] = [];
  const seen = new Map<string, number>();
  const kinds = Object.keys(APPLY_KINDS);
  flat.forEach((doc, index) => {
    if (!isRecord(doc)) {
      errors.push({ document: index, path: '', message: 'expected an object with apiVersion, kind, metadata and spec' });
      return;
    }
    const kind = doc.kind;
    if (typeof kind === 'string' && !(kind in APPLY_KINDS) && !isOwnGroup(doc.apiVersion)) {
      // Not one of ours: a resource template, validated for what the app reads.
      const parsed = templateSchema.safeParse(doc, { reportInput: true });
      if (!parsed.success) {
        errors.push(...toFieldErrors(parsed.error).map((e) => ({ ...e, document: index })));
        return;
      }
      const namespace = templateNamespace(parsed.data.kind, parsed.data.metadata.namespace);
      const { name } = parsed.data.metadata;
      const display = namespace ? `${namespace}/${name}` : name;
      const id = `${parsed.data.apiVersion}/${parsed.data.kind}/${display}`;
      const first = seen.get(id);
      if (first !== undefined) {
        errors.push({
          document: index,
          path: 'metadata.name',
          message: `${parsed.data.kind} ${display} appears twice in this request (also document ${first})`,
        });
        return;
      }
      seen.set(id, index);
      objects.push({ kind: 'ResourceTemplate', name: display, object: parsed.data });
      return;
    }
    if (typeof kind !== 'string' || !(kind in APPLY_KINDS)) {
      const near = typeof kind === 'string' ? closestName(kind, kinds) : undefined;
      const hint = near ? `; did you mean "${near}"?` : '';
      errors.push({ document: index, path: 'kind', message: `unsupported kind ${JSON.stringify(kind ?? null)}${hint} (supported: ${kinds.join(', ')})` });
      return;
    }
    const parsed = APPLY_KINDS[kind as ApplyKind].safeParse(doc, { reportInput: true });
    if (!parsed.success) {
      errors.push(...toFieldErrors(parsed.error).map((e) => ({ ...e, document: index })));
      return;
    }
    const metadata = parsed.data.metadata as { name: string; namespace?: string };
    const name = metadata.namespace ? `${metadata.namespace}/${metadata.name}` : metadata.name;
    const id = `${kind}/${name}`;
    const first = seen.get(id);
    if (first !== undefined) {
      errors.push({ document: index, path: 'metadata.name', message: `${id} appears twice in this request (also document ${first})` });
      return;
    }
    seen.set(id, index);
    objects.push({ kind, name, object: parsed.data } as AppliedObject);
  });
  if (errors.length > 0) throw badRequest(errors, 'invalid objects; nothing was applied');
  return objects;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
