/**
 * Pure pieces of the Kubernetes API test server (test/helpers/kubeApiServer.ts): JSON merge patch
 * (RFC 7386), JSON patch (RFC 6902), the label and field selector grammars, the AGE column, and the two
 * views and the validation of Events. The patch and selector functions throw `PatchError` /
 * `SelectorError` with the text the server puts in its Status message; the server maps them to the
 * codes the real kube-apiserver uses (422 for a JSON patch that does not apply, 400 for a selector or a
 * patch document it cannot parse).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A patch document that could not be applied (the real server answers 422 Invalid) or parsed (400). */
export class PatchError extends Error {
  constructor(
    message: string,
    readonly unparsable = false,
  ) {
    super(message);
  }
}

export class SelectorError extends Error {}

// Objects are free-form JSON: `any` keeps the many nested reads short (tests may use it here).
type Obj = Record<string, any>;

/** One error of a field.ErrorList, as the server renders it in a 422. */
export interface FieldError {
  field: string;
  type: 'Required' | 'Invalid' | 'TooLong';
  text: string;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

/** RFC 7386: objects merge key by key, `null` deletes, anything else (arrays included) replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/**
 * A strategic merge patch read as a merge patch, for built-in kinds only: the `$patch`,
 * `$setElementOrder/…`, `$deleteFromPrimitiveList/…` and `$retainKeys` directives are dropped, and lists
 * are replaced rather than merged by their merge key. Good enough for what kubectl apply sends for a
 * ClusterRole (its `rules` list has no merge key, so kubectl replaces it too).
 */
export function strategicAsMergePatch(target: Json, patch: Json): Json {
  return mergePatch(target, stripDirectives(patch));
}

function stripDirectives(patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    out[key] = stripDirectives(value);
  }
  return out;
}

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`JSON pointer must start with '/': ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function arrayIndex(token: string, length: number, forAdd: boolean, path: string): number {
  if (forAdd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`invalid array index ${JSON.stringify(token)} in ${path}`);
  const index = Number(token);
  if (index > length || (!forAdd && index === length)) throw new PatchError(`array index ${index} out of bounds in ${path}`);
  return index;
}

/** The container that holds the last token of `path`, and that token. The document root has no parent. */
function parentOf(doc: Json, path: string): { parent: JsonObject | Json[]; key: string } {
  const tokens = parsePointer(path);
  if (tokens.length === 0) throw new PatchError(`the whole document cannot be the target of this operation: ${path}`);
  let node: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, false, path)];
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token];
    else throw new PatchError(`doc is missing path: ${path}`);
  }
  if (!Array.isArray(node) && !isObject(node)) throw new PatchError(`doc is missing path: ${path}`);
  return { parent: node, key: tokens[tokens.length - 1] };
}

function getAt(doc: Json, path: string): Json {
  let node: Json = doc;
  for (const token of parsePointer(path)) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, false, path)];
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token];
    else throw new PatchError(`doc is missing path: ${path}`);
  }
  return node;
}

function addAt(doc: Json, path: string, value: Json): Json {
  if (path === '') return clone(value);
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, true, path), 0, clone(value));
  else parent[key] = clone(value);
  return doc;
}

function removeAt(doc: Json, path: string): Json {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, false, path), 1);
  else if (Object.hasOwn(parent, key)) delete parent[key];
  else throw new PatchError(`remove operation does not apply: doc is missing path: ${path}`);
  return doc;
}

/** RFC 6902, applied to a copy; any operation that does not apply fails the whole patch. */
export function jsonPatch(document: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw new PatchError('json: cannot unmarshal object into Go value of type jsonpatch.Patch', true);
  let doc = clone(document);
  for (const raw of operations) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string')
      throw new PatchError(`invalid JSON patch operation: ${JSON.stringify(raw)}`);
    const op = raw as unknown as Operation;
    const needsValue = () => {
      if (!Object.hasOwn(raw, 'value')) throw new PatchError(`${op.op} operation has no value: ${op.path}`);
      return raw.value;
    };
    const from = () => {
      if (typeof op.from !== 'string') throw new PatchError(`${op.op} operation has no from: ${op.path}`);
      return op.from;
    };
    switch (op.op) {
      case 'add':
        doc = addAt(doc, op.path, needsValue());
        break;
      case 'remove':
        doc = removeAt(doc, op.path);
        break;
      case 'replace': {
        const value = needsValue();
        getAt(doc, op.path); // replace needs an existing target
        doc = op.path === '' ? clone(value) : addAt(removeAt(doc, op.path), op.path, value);
        break;
      }
      case 'move': {
        const source = from();
        if (op.path.startsWith(`${source}/`)) throw new PatchError(`move operation cannot move ${source} into its own child ${op.path}`);
        const value = getAt(doc, source);
        doc = addAt(removeAt(doc, source), op.path, value);
        break;
      }
      case 'copy':
        doc = addAt(doc, op.path, getAt(doc, from()));
        break;
      case 'test': {
        const value = needsValue();
        if (!deepEqual(getAt(doc, op.path), value)) throw new PatchError(`testing value ${op.path} failed: test failed`);
        break;
      }
      default:
        throw new PatchError(`Unexpected kind: ${op.op}`);
    }
  }
  return doc;
}

/** One requirement of a label selector (k8s.io/apimachinery/pkg/labels). */
export type LabelRequirement =
  | { key: string; op: 'exists' | '!exists' }
  | { key: string; op: '=' | '!='; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'gt' | 'lt'; value: number };

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Splits on commas that are not inside `( … )`. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

function checkKey(key: string): string {
  if (!LABEL_KEY.test(key)) throw new SelectorError(`unable to parse requirement: invalid label key "${key}"`);
  return key;
}

function checkValue(value: string): string {
  if (!LABEL_VALUE.test(value) || value.length > 63) throw new SelectorError(`unable to parse requirement: invalid label value: "${value}"`);
  return value;
}

export function parseLabelSelector(selector: string): LabelRequirement[] {
  return splitTerms(selector).map((term): LabelRequirement => {
    let m = /^!\s*(\S+)$/.exec(term);
    if (m) return { key: checkKey(m[1]), op: '!exists' };
    m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(term);
    if (m) {
      const values = m[3]
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '')
        .map(checkValue);
      if (values.length === 0) throw new SelectorError(`unable to parse requirement: for '${m[2]}' operator, values set can't be empty`);
      return { key: checkKey(m[1]), op: m[2] as 'in' | 'notin', values };
    }
    m = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$/.exec(term);
    if (m) {
      const [, key, op, value] = m;
      if (op === '<' || op === '>') {
        if (!/^-?[0-9]+$/.test(value)) throw new SelectorError(`unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`);
        return { key: checkKey(key), op: op === '<' ? 'lt' : 'gt', value: Number(value) };
      }
      return { key: checkKey(key), op: op === '!=' ? '!=' : '=', value: checkValue(value.trim()) };
    }
    if (/^\S+$/.test(term)) return { key: checkKey(term), op: 'exists' };
    throw new SelectorError(`unable to parse requirement: found '${term}', expected: identifier`);
  });
}

export function matchesLabels(requirements: LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case '=':
        return has && l[r.key] === r.value;
      case '!=':
        return !has || l[r.key] !== r.value;
      case 'in':
        return has && r.values.includes(l[r.key]);
      case 'notin':
        return !has || !r.values.includes(l[r.key]);
      case 'gt':
      case 'lt': {
        if (!has || !/^-?[0-9]+$/.test(l[r.key])) return false;
        const n = Number(l[r.key]);
        return r.op === 'gt' ? n > r.value : n < r.value;
      }
    }
  });
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

/** Splits on `sep` characters not escaped with a backslash. */
function splitUnescaped(text: string, sep: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\' && i + 1 < text.length) {
      current += text[i] + text[i + 1];
      i++;
    } else if (text[i] === sep) {
      parts.push(current);
      current = '';
    } else current += text[i];
  }
  parts.push(current);
  return parts;
}

function unescapeField(value: string): string {
  return value.replace(/\\(.)/g, (_m, ch: string) => {
    if (ch !== '\\' && ch !== ',' && ch !== '=') throw new SelectorError(`invalid field selector: invalid escape sequence: \\${ch}`);
    return ch;
  });
}

/** `a=b,c!=d` (also `a==b`); values may escape `\,` `\=` `\\` as fields.EscapeValue does. */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  return splitUnescaped(selector, ',')
    .filter((t) => t.trim() !== '')
    .map((term) => {
      const m = /^([^=!]+?)(==|=|!=)(.*)$/.exec(term);
      if (!m) throw new SelectorError(`invalid field selector: '${term}' is not a valid field selector: no operator`);
      return { field: m[1].trim(), op: m[2] === '!=' ? '!=' : '=', value: unescapeField(m[3]) };
    });
}

export function matchesFields(requirements: FieldRequirement[], valueOf: (field: string) => string): boolean {
  return requirements.every((r) => (valueOf(r.field) === r.value) === (r.op === '='));
}

// ---------------------------------------------------------------------------------------------------------
// Table ages and field selectors.

/** duration.HumanDuration from k8s.io/apimachinery: the AGE column. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** The field selectors every resource supports. */
export function metaFieldValue(obj: Obj, field: string): string | undefined {
  if (field === 'metadata.name') return obj.metadata?.name ?? '';
  if (field === 'metadata.namespace') return obj.metadata?.namespace ?? '';
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Events: stored once in the events.k8s.io/v1 form, served also as core/v1 (the real server stores the
// internal core.Event and converts both ways with the same field pairs).

const EVENT_FIELD_PAIRS: [core: string, events: string][] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];
const EVENT_SHARED_FIELDS = ['reason', 'type', 'action', 'related', 'series', 'eventTime', 'reportingInstance'];

export function toCoreEvent(stored: Obj): Obj {
  const out: Obj = { apiVersion: 'v1', kind: 'Event', metadata: clone(stored.metadata) };
  for (const [core, events] of EVENT_FIELD_PAIRS) if (stored[events] !== undefined) out[core] = clone(stored[events]);
  for (const f of EVENT_SHARED_FIELDS) if (stored[f] !== undefined) out[f] = clone(stored[f]);
  // core/v1 renders these without omitempty: zero times as null, an empty source, empty reporting strings.
  out.involvedObject ??= {};
  out.source ??= {};
  out.firstTimestamp ??= null;
  out.lastTimestamp ??= null;
  out.eventTime ??= null;
  out.reportingComponent ??= '';
  out.reportingInstance ??= '';
  return out;
}

export function fromCoreEvent(obj: Obj): Obj {
  const out: Obj = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: clone(obj.metadata ?? {}) };
  for (const [core, events] of EVENT_FIELD_PAIRS) if (obj[core] !== undefined && obj[core] !== null && obj[core] !== '') out[events] = clone(obj[core]);
  for (const f of EVENT_SHARED_FIELDS) if (obj[f] !== undefined && obj[f] !== null && obj[f] !== '') out[f] = clone(obj[f]);
  if (isObject(out.deprecatedSource) && Object.keys(out.deprecatedSource).length === 0) delete out.deprecatedSource;
  return out;
}

export function eventsV1View(stored: Obj): Obj {
  const out = clone(stored);
  out.eventTime ??= null;
  return out;
}

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** MicroTime decodes with layout 2006-01-02T15:04:05.000000Z07:00: exactly six fractional digits; else the 400's message. */
export function microTimeError(obj: Obj): string | undefined {
  for (const value of [obj.eventTime, obj.series?.lastObservedTime]) {
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' || !MICRO_TIME.test(value) || Number.isNaN(Date.parse(value))) {
      return `Event in version "v1" cannot be handled as a Event: parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse as RFC 3339 with microseconds`;
    }
  }
  return undefined;
}

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** ValidateEventCreate for events.k8s.io/v1 (pkg/apis/core/validation/events.go), the parts a client can get wrong. */
export function eventV1Errors(obj: Obj, namespace: string): FieldError[] {
  const errors: FieldError[] = [];
  const required = (field: string) => errors.push({ field, type: 'Required', text: 'Required value' });
  if (!obj.eventTime) required('eventTime');
  if (obj.type !== 'Normal' && obj.type !== 'Warning')
    errors.push({ field: 'type', type: 'Invalid', text: `Invalid value: "": has invalid value: ${obj.type ?? ''}` });
  if (!obj.regarding?.namespace && namespace !== 'default' && namespace !== 'kube-system') {
    errors.push({ field: 'involvedObject.namespace', type: 'Invalid', text: 'Invalid value: "": does not match event.namespace' });
  }
  if (!obj.reportingController) required('reportingController');
  else if (!QUALIFIED_NAME.test(String(obj.reportingController)))
    errors.push({
      field: 'reportingController',
      type: 'Invalid',
      text: `Invalid value: ${JSON.stringify(obj.reportingController)}: must be a qualified name`,
    });
  if (!obj.reportingInstance) required('reportingInstance');
  if (!obj.action) required('action');
  if (!obj.reason) required('reason');
  for (const [field, limit] of [
    ['reportingInstance', 128],
    ['action', 128],
    ['reason', 128],
    ['note', 1024],
  ] as const) {
    if (typeof obj[field] === 'string' && obj[field].length > limit)
      errors.push({ field, type: 'TooLong', text: `Too long: may not be more than ${limit} bytes` });
  }
  for (const f of ['deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount', 'deprecatedSource']) {
    if (obj[f] !== undefined && obj[f] !== null && !(isObject(obj[f]) && Object.keys(obj[f]).length === 0))
      errors.push({ field: f, type: 'Invalid', text: 'Invalid value: "": needs to be unset' });
  }
  if (obj.series !== undefined && obj.series !== null) {
    if (!(Number(obj.series.count) >= 2)) errors.push({ field: 'series.count', type: 'Invalid', text: 'Invalid value: "": should be at least 2' });
    if (!obj.series.lastObservedTime) required('series.lastObservedTime');
  }
  return errors;
}

/** Field selectors of events: `involvedObject.*` and `reportingComponent`, `source` on core/v1; `regarding.*` and `reportingController` on events.k8s.io/v1. */
export function eventFieldValue(prefix: 'involvedObject' | 'regarding', reporting: string, source: boolean) {
  return (obj: Obj, field: string): string | undefined => {
    const meta = metaFieldValue(obj, field);
    if (meta !== undefined) return meta;
    const [head, sub, ...rest] = field.split('.');
    if (head === prefix && rest.length === 0 && ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].includes(sub)) {
      return String(obj[prefix]?.[sub] ?? '');
    }
    if (field === 'reason' || field === 'type' || field === reporting) return String(obj[field] ?? '');
    if (source && field === 'source') return String(obj.source?.component ?? '');
    return undefined;
  };
}
