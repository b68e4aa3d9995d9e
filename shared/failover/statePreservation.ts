import { JSONPath } from 'jsonpath-plus';

/**
 * statePreservation (Karmada v1.12+ application failover, v1.15+ cluster failover), pure: when a cluster is
 * evicted, each rule's JSONPath is run against the status last collected from that cluster
 * (`status.aggregatedStatus[].status`), and the results become the graceful-eviction task's
 * `preservedLabelState` (aliasLabelName → value), so the new placement can take over where the old one
 * stopped (a job id, a checkpoint).
 *
 * `jsonPath` is a Kubernetes JSONPath template, as Karmada (and kubectl) read it: text with `{...}` actions,
 * evaluated from `.status` (write `{.jobId}`, not `{.status.jobId}`). The template is parsed here, in
 * Kubernetes' dialect (fields with `\` escapes, `..`, `*`, `[n]` with negative indexes, `[a:b:c]`, unions
 * `[0,2]` / `['a','b']`, filters `[?(@.type=="Ready")]` with == != < <= > >=, quoted text `{"-"}`), and each
 * path is evaluated by jsonpath-plus (its safe evaluator, fed only expressions generated here). As in
 * Kubernetes, several matches print separated by a space, strings print as they are, numbers and booleans
 * as JSON, objects and lists as JSON (keys sorted, as Go prints a map). `range`/`end` are not supported: a
 * label takes one value.
 *
 * Karmada fails the eviction when a key is missing (`AllowMissingKeys(false)`) and retries until a status
 * is collected; here the eviction goes ahead (a failed cluster may never report again) and a rule that finds
 * nothing (no status collected, no match, or only null) is returned in `missed`, for the caller to record.
 *
 * This module imports nothing from the API layer (the schemas validate templates with it).
 */

export interface StatePreservationRule {
  aliasLabelName: string;
  jsonPath: string;
}

export interface MissedRule extends StatePreservationRule {
  why: string;
}

export interface PreservedState {
  preservedLabelState: Record<string, string>;
  missed: MissedRule[];
}

/** The longest value preserved (a longer one is recorded as missed): the task is stored with the binding. */
export const MAX_PRESERVED_VALUE = 4096;

export class JsonPathError extends Error {
  override name = 'JsonPathError';
}

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'wildcard' }
  | { kind: 'recursive' }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number; step?: number }
  | { kind: 'union'; items: Array<string | number> }
  | { kind: 'filter'; expression: string };

type Segment = { kind: 'text'; text: string } | { kind: 'path'; source: string; steps: Step[] };

const FILTER_OPERATORS: Record<string, string> = { '==': '===', '!=': '!==', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Characters jsonpath-plus's path syntax cannot carry inside a property name, whatever the quoting. */
const UNSUPPORTED_NAME = /['[\];,~^#]|%@%|@(?:null|boolean|number|string|integer|undefined|nonFinite|scalar|array|object|function|other)\(\)/;
/** Characters a filter's names and strings may not hold (they would end or re-open the expression). */
const UNSUPPORTED_IN_FILTER = /['()[\]@`]/;

const templates = new Map<string, Segment[]>();

/** Parses a Kubernetes JSONPath template; throws JsonPathError saying what is wrong and where. */
export function parseJsonPath(template: string): Segment[] {
  const cached = templates.get(template);
  if (cached) return cached;
  const segments: Segment[] = [];
  let text = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      text += template.slice(i);
      break;
    }
    text += template.slice(i, open);
    const close = actionEnd(template, open + 1);
    const action = template.slice(open + 1, close);
    const parsed = parseAction(action, open + 1);
    if (parsed.kind === 'text') text += parsed.text;
    else {
      if (text) segments.push({ kind: 'text', text });
      text = '';
      segments.push(parsed);
    }
    i = close + 1;
  }
  if (text) segments.push({ kind: 'text', text });
  if (!segments.some((s) => s.kind === 'path')) {
    throw new JsonPathError('has no {...} path: write the path in braces, as in Kubernetes JSONPath, e.g. "{.jobId}"');
  }
  if (templates.size > 1000) templates.clear();
  templates.set(template, segments);
  return segments;
}

/** Why a template is not valid Kubernetes JSONPath (as supported here), or undefined when it is. */
export function jsonPathProblem(template: string): string | undefined {
  try {
    parseJsonPath(template);
    return undefined;
  } catch (error) {
    if (error instanceof JsonPathError) return error.message;
    throw error;
  }
}

/** The index of the `}` closing the action that starts at `from` (quotes and brackets may hold braces). */
function actionEnd(template: string, from: number): number {
  let quote: string | undefined;
  let depth = 0;
  for (let i = from; i < template.length; i++) {
    const c = template[i];
    if (c === '\n' || c === '\r') break;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '\\') i++;
    else if (c === '[' || c === '(') depth++;
    else if (c === ']' || c === ')') depth = Math.max(0, depth - 1);
    else if (c === '}' && depth === 0) return i;
  }
  const open = depth > 0 ? ' (a "[" or "(" in it is not closed)' : quote ? ` (a ${quote} string in it is not closed)` : '';
  throw new JsonPathError(`unclosed action: the "{" at position ${from - 1} has no matching "}"${open}`);
}

function parseAction(action: string, offset: number): Segment {
  const trimmed = action.trim();
  if (trimmed === '') throw new JsonPathError(`empty action "{}" at position ${offset - 1}`);
  if (/^(range|end)\b/.test(trimmed)) throw new JsonPathError('range/end is not supported: a rule preserves one value; write one path per rule');
  const quoted = quotedString(trimmed, 0);
  if (quoted && quoted.end === trimmed.length) return { kind: 'text', text: quoted.value };
  return { kind: 'path', source: trimmed, steps: parsePath(trimmed, offset + action.indexOf(trimmed)) };
}

/** A quoted string starting at `at` ("..." with JSON escapes or '...'), or undefined. */
function quotedString(source: string, at: number): { value: string; end: number } | undefined {
  const quote = source[at];
  if (quote !== '"' && quote !== "'") return undefined;
  for (let i = at + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === quote) {
      const body = source.slice(at + 1, i);
      if (quote === "'") return { value: body.replace(/\\(.)/g, '$1'), end: i + 1 };
      try {
        return { value: JSON.parse(`"${body}"`) as string, end: i + 1 };
      } catch {
        throw new JsonPathError(`invalid escape in the string ${source.slice(at, i + 1)}`);
      }
    }
  }
  throw new JsonPathError(`unterminated string starting at ${source.slice(at, at + 20)}`);
}

/** Kubernetes' isTerminator: what ends a field name after a ".". */
const isTerminator = (c: string) => /[\s.,[\]$@{}]/.test(c);

function parsePath(source: string, offset: number, inFilter = false): Step[] {
  const steps: Step[] = [];
  let i = 0;
  const fail = (message: string): never => {
    throw new JsonPathError(`${message} at position ${offset + i} in "${source}"`);
  };
  if (source[0] === '$' || source[0] === '@') i = 1;
  while (i < source.length) {
    const c = source[i];
    if (c === ' ' || c === '\t') {
      i++;
    } else if (source.startsWith('[?(', i)) {
      if (inFilter) fail('a filter inside a filter is not supported');
      const end = filterEnd(source, i + 3);
      if (end < 0) fail('unclosed filter: "[?(" needs ")]"');
      steps.push({ kind: 'filter', expression: translateFilter(source.slice(i + 3, end), offset + i + 3) });
      i = end + 2;
    } else if (source.startsWith('..', i)) {
      if (inFilter) fail('".." is not supported in a filter');
      steps.push({ kind: 'recursive' });
      i += 2;
      if (i < source.length && !isTerminator(source[i])) i = field(source, i, steps, fail);
    } else if (c === '.') {
      i = field(source, i + 1, steps, fail);
    } else if (c === '[') {
      const end = bracketEnd(source, i + 1);
      if (end < 0) fail('unclosed "["');
      steps.push(arrayStep(source.slice(i + 1, end), fail, inFilter));
      i = end + 1;
    } else {
      fail(`unexpected "${c}" (a path is made of .field, [index], [*], .. and [?(filter)]; text goes in quotes, e.g. {"-"})`);
    }
  }
  return steps;
}

function field(source: string, from: number, steps: Step[], fail: (m: string) => never): number {
  let name = '';
  let i = from;
  while (i < source.length && !isTerminator(source[i])) {
    if (source[i] === '\\' && i + 1 < source.length) i++;
    name += source[i];
    i++;
  }
  if (name === '*') steps.push({ kind: 'wildcard' });
  else if (name !== '') {
    if (UNSUPPORTED_NAME.test(name)) fail(`the field name "${name}" has a character that is not supported here (' [ ] ; , ~ ^ #)`);
    steps.push({ kind: 'field', name });
  }
  return i;
}

/** The index of `closer` (outside quotes) from `from`, or -1: the end of a bracket (`]`) or of a filter (`)]`). */
function closingIndex(source: string, from: number, closer: ']' | ')]'): number {
  let quote: string | undefined;
  for (let i = from; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (source.startsWith(closer, i)) return i;
  }
  return -1;
}

const bracketEnd = (source: string, from: number) => closingIndex(source, from, ']');
const filterEnd = (source: string, from: number) => closingIndex(source, from, ')]');

const INTEGER = /^[+-]?\d+$/;

function arrayStep(inner: string, fail: (m: string) => never, inFilter: boolean): Step {
  const body = inner.trim();
  if (body === '') fail('empty "[]"');
  if (body === '*') {
    if (inFilter) fail('"[*]" is not supported in a filter');
    return { kind: 'wildcard' };
  }
  const items = splitUnion(body, fail);
  if (items.length === 1 && typeof items[0] === 'string' && !isQuoted(body)) {
    // [a:b:c]
    const parts = body.split(':');
    if (parts.length < 2 || parts.length > 3 || parts.some((p) => p.trim() !== '' && !INTEGER.test(p.trim()))) {
      fail(`invalid array subscript "[${inner}]" (an index, a slice a:b:c, a union, a quoted name or *)`);
    }
    if (inFilter) fail('a slice is not supported in a filter');
    const [start, end, step] = parts.map((p) => (p.trim() === '' ? undefined : Number(p.trim())));
    if (step !== undefined && step <= 0) fail('a slice step must be greater than 0');
    if (end === 0) fail('a slice ending at 0 selects nothing');
    return { kind: 'slice', ...(start !== undefined ? { start } : {}), ...(end !== undefined ? { end } : {}), ...(step !== undefined ? { step } : {}) };
  }
  if (items.length === 1) {
    const only = items[0];
    return typeof only === 'number' ? { kind: 'index', index: only } : { kind: 'field', name: only };
  }
  if (inFilter) fail('a union is not supported in a filter');
  if (items.some((item) => typeof item === 'number' && item < 0)) fail('negative indexes are not supported in a union');
  return { kind: 'union', items };
}

const isQuoted = (s: string) => s.startsWith('"') || s.startsWith("'");

/** Comma-separated integers or quoted names; a lone unquoted non-integer comes back as itself (a slice). */
function splitUnion(body: string, fail: (m: string) => never): Array<string | number> {
  const items: Array<string | number> = [];
  let i = 0;
  while (i < body.length) {
    while (body[i] === ' ') i++;
    const quoted = quotedString(body, i);
    let item: string | number;
    if (quoted) {
      item = quoted.value;
      if (UNSUPPORTED_NAME.test(item)) fail(`the field name "${item}" has a character that is not supported here (' [ ] ; , ~ ^ #)`);
      i = quoted.end;
    } else {
      const comma = body.indexOf(',', i);
      const raw = body.slice(i, comma < 0 ? body.length : comma).trim();
      if (INTEGER.test(raw)) item = Number(raw);
      else if (comma < 0 && items.length === 0) return [raw];
      else fail(`invalid union item "${raw}" (integers or quoted names)`);
      i = comma < 0 ? body.length : comma;
    }
    items.push(item!);
    while (body[i] === ' ') i++;
    if (i < body.length) {
      if (body[i] !== ',') fail(`expected "," in "[${body}]"`);
      i++;
    }
  }
  return items;
}

/**
 * A Kubernetes filter (`@.a.b op literal`, or `@.a` alone for "exists") as an expression for jsonpath-plus's
 * safe evaluator: `@` paths become member accesses, == and != strict comparisons.
 */
function translateFilter(text: string, offset: number): string {
  const match = /^([^!<>=]+)([!<>=]+)(.+?)$/.exec(text.trim());
  if (!match) return `${operand(text.trim(), offset)} !== undefined`;
  const operator = FILTER_OPERATORS[match[2]];
  if (!operator) throw new JsonPathError(`unsupported filter operator "${match[2]}" at position ${offset} (==, !=, <, <=, > or >=)`);
  return `${operand(match[1].trim(), offset)} ${operator} ${operand(match[3].trim(), offset)}`;
}

function operand(text: string, offset: number): string {
  if (text === '') throw new JsonPathError(`empty filter operand at position ${offset}`);
  const quoted = quotedString(text, 0);
  if (quoted) {
    if (quoted.end !== text.length) throw new JsonPathError(`unexpected text after the string ${text.slice(0, quoted.end)} in a filter`);
    if (UNSUPPORTED_IN_FILTER.test(quoted.value)) throw new JsonPathError(`the string ${text} has a character not supported in a filter (' ( ) [ ] @ \`)`);
    return JSON.stringify(quoted.value);
  }
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return String(Number(text));
  if (text === 'true' || text === 'false') return text;
  if (text[0] !== '@' && text[0] !== '$') {
    throw new JsonPathError(`invalid filter operand "${text}" at position ${offset} (a path from @ or $, a quoted string, a number, true or false)`);
  }
  let js = text[0] === '@' ? '@' : '@root';
  for (const step of parsePath(text, offset, true)) {
    if (step.kind === 'field') {
      if (UNSUPPORTED_IN_FILTER.test(step.name)) throw new JsonPathError(`the field name "${step.name}" has a character not supported in a filter`);
      js += IDENTIFIER.test(step.name) ? `.${step.name}` : `[${JSON.stringify(step.name)}]`;
    } else if (step.kind === 'index' && step.index >= 0) js += `[${step.index}]`;
    else throw new JsonPathError(`filter operand "${text}": only fields and non-negative indexes are supported in a filter`);
  }
  // A bare "@" would be left for jsonpath-plus to rewrite only before . [ ) or a space.
  return js === '@' ? '@ ' : js;
}

/** The jsonpath-plus path for parsed steps; names go in backtick-escaped brackets, so no name is an operator. */
function toJsonPathPlus(steps: readonly Step[]): string {
  let path = '$';
  for (const step of steps) {
    switch (step.kind) {
      case 'field':
        path += `[\`${step.name}]`;
        break;
      case 'wildcard':
        path += '[*]';
        break;
      case 'recursive':
        path += '..';
        break;
      case 'index':
        // jsonpath-plus has no negative index; [-k:-k+1] is the k-th from the end (its slice reads an end of 0 as the length).
        path += step.index >= 0 ? `[${step.index}]` : `[${step.index}:${step.index + 1}]`;
        break;
      case 'slice':
        path += `[${step.start ?? ''}:${step.end ?? ''}${step.step !== undefined ? `:${step.step}` : ''}]`;
        break;
      case 'union':
        path += `[${step.items.map((item) => (typeof item === 'number' ? String(item) : `\`${item}`)).join(',')}]`;
        break;
      case 'filter':
        path += `[?(${step.expression})]`;
        break;
    }
  }
  // A trailing ".." (k8s "{..}") means every node below; jsonpath-plus needs a selector after it.
  return path.endsWith('..') ? `${path}*` : path;
}

/** Go's json.Marshal of a decoded value: map keys sorted. */
function goJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v as Record<string, unknown>)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

const print = (value: unknown) => (typeof value === 'string' ? value : goJson(value));

export type Evaluation = { found: true; value: string } | { found: false; why: string };

/** Runs a template against a status object. Every path must match something that is not null. */
export function evaluateJsonPath(template: string, status: unknown): Evaluation {
  let out = '';
  for (const segment of parseJsonPath(template)) {
    if (segment.kind === 'text') {
      out += segment.text;
      continue;
    }
    const json: object = typeof status === 'object' && status !== null ? status : {};
    const results =
      segment.steps.length === 0
        ? [json]
        : (JSONPath<unknown[] | undefined>({ path: toJsonPathPlus(segment.steps), json, wrap: true, eval: 'safe', ignoreEvalErrors: true }) ?? []);
    const values = results.filter((v) => v !== null && v !== undefined);
    if (values.length === 0) return { found: false, why: `{${segment.source}} ${results.length > 0 ? 'is null' : 'found nothing'} in the status` };
    out += values.map(print).join(' ');
  }
  return { found: true, value: out };
}

/**
 * The preserved label state of an eviction: each rule's value from the evicted cluster's status. A rule that
 * finds nothing, or whose value is longer than MAX_PRESERVED_VALUE, is returned in `missed` with why.
 */
export function preserveState(rules: readonly StatePreservationRule[], status: unknown): PreservedState {
  const preservedLabelState: Record<string, string> = {};
  const missed: MissedRule[] = [];
  for (const rule of rules) {
    const base = { aliasLabelName: rule.aliasLabelName, jsonPath: rule.jsonPath };
    if (status === undefined || status === null) {
      missed.push({ ...base, why: 'no status was collected from the cluster' });
      continue;
    }
    let result: Evaluation;
    try {
      result = evaluateJsonPath(rule.jsonPath, status);
    } catch (error) {
      // Rules are validated when applied; one stored before a stricter check is reported, not thrown.
      missed.push({ ...base, why: error instanceof Error ? error.message : String(error) });
      continue;
    }
    if (!result.found) missed.push({ ...base, why: result.why });
    else if (result.value.length > MAX_PRESERVED_VALUE) missed.push({ ...base, why: `the value is longer than ${MAX_PRESERVED_VALUE} characters` });
    else preservedLabelState[rule.aliasLabelName] = result.value;
  }
  return { preservedLabelState, missed };
}
