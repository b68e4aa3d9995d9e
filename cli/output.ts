/** Output formats: the default table (or text), `wide` (more columns), or the API's own JSON as JSON or YAML. */
export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

export const OUTPUT_FORMATS: OutputFormat[] = ['wide', 'json', 'yaml'];

/** YAML text of `value`; the yaml package loads only when asked (it is most of the start-up time otherwise). */
export async function yamlOf(value: unknown): Promise<string> {
  const { stringify } = await import('yaml');
  return stringify(value, { lineWidth: 0 });
}

/** Writes `value` to stdout as JSON (two-space indent) or YAML. */
export async function printData(value: unknown, format: 'json' | 'yaml'): Promise<void> {
  process.stdout.write(format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : await yamlOf(value));
}
