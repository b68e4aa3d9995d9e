import { LineCounter, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { templateNamespace } from '../failover/templates';
import { ApiError, badRequest, FieldError, formatPath, toFieldErrors } from './errors';
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
/** Errors listed in one answer; the rest are counted ("and N more"), so a bad bulk import gets a short answer. */
export const MAX_REPORTED_ERRORS = 100;
/**
 * How much larger than the body YAML aliases may make the documents (in characters of keys and strings):
 * a few aliases are fine, a 24 KB anchor repeated 45 times is not (maxAliasCount counts aliases, not what
 * they expand to).
 */
const MAX_ALIAS_EXPANSION = 2;
const EXPANSION_ALLOWANCE = 64 * 1024;

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

/** At most MAX_REPORTED_ERRORS errors, then one saying how many more there were. */
export function reportedErrors(errors: FieldError[]): FieldError[] {
  if (errors.length <= MAX_REPORTED_ERRORS) return errors;
  const more = errors.length - MAX_REPORTED_ERRORS;
  return [
    ...errors.slice(0, MAX_REPORTED_ERRORS),
    { path: '', message: `and ${more} more error${more === 1 ? '' : 's'} (the first ${MAX_REPORTED_ERRORS} are listed)` },
  ];
}

/**
 * Parses one or more documents (YAML multi-document, or JSON) and checks them: nesting depth, no key given
 * twice in one object, no "__proto__" key, and YAML aliases that do not blow the body up.
 */
export function parseDocuments(text: string, format: BodyFormat): unknown[] {
  let documents: unknown[];
  if (format === 'json') {
    try {
      documents = [JSON.parse(text)];
    } catch (error) {
      throw badRequest([{ path: '', message: `body is not valid JSON: ${(error as Error).message}` }], 'body is not valid JSON');
    }
    // JSON.parse keeps the last of two equal keys without a word; YAML refuses them, and so does this API.
    const repeated = repeatedJsonKey(text);
    if (repeated) {
      throw badRequest(
        [{ path: repeated.path, message: `duplicate key ${JSON.stringify(repeated.key)}: an object may give each key once` }],
        `duplicate key ${JSON.stringify(repeated.key)} at ${repeated.path}`,
      );
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
    if (errors.length > 0) throw badRequest(reportedErrors(errors), 'body is not valid YAML');
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
  // Shared by all documents: aliases make one node count as often as it is referred to.
  const budget = { left: text.length * MAX_ALIAS_EXPANSION + EXPANSION_ALLOWANCE };
  documents.forEach((doc, index) => {
    const problem = inspect(doc, [], budget);
    if (problem) throw badRequest([{ path: formatPath(problem.path), document: index, message: problem.message }], problem.summary);
  });
  return documents;
}

interface DocumentProblem {
  path: PropertyKey[];
  message: string;
  summary: string;
}

/**
 * Walks a parsed document: too deep, a "__proto__" key (schemas and object spreads drop it, so it would
 * vanish without a word), or more characters than the budget allows (aliases expanded), whichever comes first.
 */
function inspect(value: unknown, path: PropertyKey[], budget: { left: number }): DocumentProblem | undefined {
  budget.left -= typeof value === 'string' ? value.length + 1 : 1;
  if (budget.left < 0) {
    return {
      path: [],
      message: `YAML aliases expand the body to more than ${MAX_ALIAS_EXPANSION} times its size; write the repeated values out`,
      summary: 'body expands too much',
    };
  }
  if (value === null || typeof value !== 'object') return undefined;
  // The root object is level 1: an object at path length MAX_DEPTH is one level too many.
  if (path.length >= MAX_DEPTH) return { path: [], message: `nesting is deeper than ${MAX_DEPTH} levels`, summary: 'body is nested too deeply' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = inspect(value[i], [...path, i], budget);
      if (problem) return problem;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (key === '__proto__') {
      return {
        path: [...path, key],
        message: 'key "__proto__" is not allowed: it names an object\'s prototype, and would be dropped',
        summary: 'body holds a "__proto__" key',
      };
    }
    budget.left -= key.length;
    const problem = inspect(child, [...path, key], budget);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * The first key that an object of this JSON text (valid JSON: JSON.parse accepted it) gives twice, and
 * where; undefined when there is none. Keys are compared decoded ("n\u0061me" is "name").
 */
export function repeatedJsonKey(text: string): { path: string; key: string } | undefined {
  // One frame per open object or array: the object's keys so far and its current key, or the array's index.
  const stack: Array<{ keys?: Set<string>; key?: string; index: number }> = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: it ends at the next quote not escaped by an odd number of backslashes.
      let end = text.indexOf('"', i + 1);
      for (;;) {
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      const top = stack[stack.length - 1];
      if (expectingKey && top?.keys) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (top.keys.has(key)) {
          const at = [...stack.slice(0, -1).map((frame) => (frame.keys ? (frame.key ?? '') : frame.index)), key];
          return { path: formatPath(at), key };
        }
        top.keys.add(key);
        top.key = key;
        expectingKey = false;
      }
      i = end;
      continue;
    }
    if (c === 0x7b) {
      stack.push({ keys: new Set(), index: 0 });
      expectingKey = true;
    } else if (c === 0x5b) {
      stack.push({ index: 0 });
      expectingKey = false;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectingKey = false;
    } else if (c === 0x2c) {
      const top = stack[stack.length - 1];
      if (top?.keys) expectingKey = true;
      else if (top) top.index++;
    }
  }
  return undefined;
}

/** Parses a single-object body (status reports and the like) against a schema. */
export function decodeSingle<S extends z.ZodType>(documents: unknown[], schema: S): z.infer<S> {
  if (documents.length !== 1) {
    throw badRequest([{ path: '', message: `expected exactly one document, got ${documents.length}` }]);
  }
  const parsed = schema.safeParse(documents[0], { reportInput: true });
  if (!parsed.success) throw badRequest(reportedErrors(toFieldErrors(parsed.error)));
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
  const isApplyKind = (kind: unknown): kind is ApplyKind => typeof kind === 'string' && Object.hasOwn(APPLY_KINDS, kind);
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
    if (kind === 'List') {
      errors.push({ document: index, path: 'items', message: 'a List must hold its objects in an array "items"' });
      return;
    }
    // Own properties only: "toString" or "__proto__" is no kind of ours, whatever every object inherits.
    if (typeof kind === 'string' && !isApplyKind(kind) && !isOwnGroup(doc.apiVersion)) {
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
    if (!isApplyKind(kind)) {
      const near = typeof kind === 'string' ? closestName(kind, kinds) : undefined;
      const hint = near ? `; did you mean "${near}"?` : '';
      // A missing or non-string kind is told as such, not as a kind named "null".
      const problem =
        kind === undefined || kind === null
          ? 'required field is missing'
          : typeof kind === 'string'
            ? `unsupported kind ${JSON.stringify(kind)}${hint}`
            : `expected a string, got ${Array.isArray(kind) ? 'array' : typeof kind}`;
      errors.push({ document: index, path: 'kind', message: `${problem} (supported: ${kinds.join(', ')})` });
      return;
    }
    const parsed = APPLY_KINDS[kind].safeParse(doc, { reportInput: true });
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
  if (errors.length > 0) throw badRequest(reportedErrors(errors), 'invalid objects; nothing was applied');
  return objects;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
