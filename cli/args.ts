/** Command-line parsing: flags anywhere on the line, `--flag value`, `--flag=value`, `-o json`, `-ojson`, `--` ends flags. */

/** A mistake on the command line (exit code 2). */
export class UsageError extends Error {}

export interface FlagSpec {
  /** Long name without dashes, e.g. `output`. */
  name: string;
  short?: string;
  /** Takes a value (otherwise a boolean switch). */
  value: boolean;
  /** Can be given several times; values collect in order. */
  repeat?: boolean;
}

export const FLAGS: FlagSpec[] = [
  { name: 'server', value: true },
  { name: 'token', value: true },
  { name: 'request-timeout', value: true },
  { name: 'output', short: 'o', value: true },
  { name: 'help', short: 'h', value: false },
  { name: 'namespace', short: 'n', value: true },
  { name: 'filename', short: 'f', value: true },
  { name: 'cluster', value: true },
  { name: 'state', value: true },
  { name: 'kind', value: true },
  { name: 'api-version', value: true },
  { name: 'name', value: true },
  { name: 'since', value: true },
  { name: 'limit', value: true },
  { name: 'watch', short: 'w', value: false },
  { name: 'condition', value: true },
  { name: 'reason', value: true },
  { name: 'message', value: true },
  { name: 'cluster-key', value: true },
];

/** Flags every command accepts. */
export const GLOBAL_FLAGS = ['server', 'token', 'request-timeout', 'help'];

export interface Parsed {
  positionals: string[];
  flags: Map<string, string[]>;
}

export function parseArgs(argv: string[], specs: FlagSpec[] = FLAGS): Parsed {
  const byLong = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]));
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const set = (spec: FlagSpec, value: string) => {
    const values = flags.get(spec.name) ?? [];
    if (values.length > 0 && !spec.repeat && spec.value) throw new UsageError(`flag --${spec.name} given more than once`);
    flags.set(spec.name, [...values, value]);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    let shown = arg;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      shown = `--${name}`;
      inline = eq === -1 ? undefined : arg.slice(eq + 1);
      spec = byLong.get(name);
    } else if (arg.startsWith('-') && arg.length > 1) {
      shown = arg.slice(0, 2);
      spec = byShort.get(arg[1]);
      if (arg.length > 2) inline = arg[2] === '=' ? arg.slice(3) : arg.slice(2);
    } else {
      positionals.push(arg);
      continue;
    }
    if (!spec) throw new UsageError(`unknown flag ${shown}`);
    if (!spec.value) {
      if (inline !== undefined && !['true', 'false'].includes(inline)) throw new UsageError(`flag ${shown} takes no value`);
      if (inline !== 'false') set(spec, 'true');
      continue;
    }
    if (inline === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`flag ${shown} needs a value`);
      inline = argv[++i];
    }
    set(spec, inline);
  }
  return { positionals, flags };
}

/** The value of a flag given at most once (undefined when absent). */
export const flag = (parsed: Parsed, name: string): string | undefined => parsed.flags.get(name)?.[0];
export const has = (parsed: Parsed, name: string): boolean => parsed.flags.has(name);

/** Refuses flags that `command` does not take. */
export function allowOnly(parsed: Parsed, command: string, allowed: string[]): void {
  for (const name of parsed.flags.keys()) {
    if (!GLOBAL_FLAGS.includes(name) && !allowed.includes(name)) throw new UsageError(`flag --${name} does not apply to "${command}"`);
  }
}
