import { readFileSync } from 'node:fs';
import { flag, UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { ApplyAnswer } from '../types';

function readInput(file: string): string {
  if (file === '-') return readFileSync(0, 'utf8');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** `apply -f FILE|-`: sends the YAML (one or more documents, or JSON) as is; prints `kind/name action` per object. */
export async function apply(ctx: Context): Promise<void> {
  if (ctx.args.length > 0) throw new UsageError(`unexpected argument "${ctx.args[0]}"; apply reads -f FILE or -f -`);
  const file = flag(ctx.parsed, 'filename');
  if (!file) throw new UsageError('apply needs -f FILE (or -f - to read stdin)');
  if (ctx.output === 'wide') throw new UsageError('apply prints -o json or -o yaml, not wide');
  const body = readInput(file);
  if (body.trim() === '') throw new UsageError(`${file === '-' ? 'stdin' : file} is empty; nothing to apply`);
  const answer = await ctx.client.post<ApplyAnswer>('apply', { body, contentType: 'application/yaml' });
  if (ctx.output === 'json' || ctx.output === 'yaml') return await printData(answer, ctx.output);
  for (const r of answer.results) process.stdout.write(`${r.kind.toLowerCase()}/${r.name} ${r.action}\n`);
}
