import { readFileSync } from 'node:fs';
import { flag, UsageError } from '../args';
import { ApiError } from '../client';
import { Context } from '../context';
import { printData } from '../output';
import { ApplyAnswer, ApplyOperation } from '../types';

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
  const answer = await ctx.client.post<ApplyAnswer | ApplyOperation>('apply', { body, contentType: 'application/yaml' });
  const results = 'results' in answer && !('state' in answer) ? answer.results : await untilApplied(ctx, answer);
  if (ctx.output === 'json' || ctx.output === 'yaml') return await printData({ results }, ctx.output);
  for (const r of results) process.stdout.write(`${r.kind.toLowerCase()}/${r.name} ${r.action}\n`);
}

/** How often a background apply's progress is read. */
const POLL_MS = 1000;

/**
 * A large request is applied in the background (202): its progress is read every second and said on stderr
 * until it ends; then its results, as a request applied at once would print them. One that stopped fails
 * with the server's reason and how far it got.
 */
async function untilApplied(ctx: Context, started: ApplyOperation): Promise<ApplyAnswer['results']> {
  process.stderr.write(`applying ${started.total} objects in the background (operation ${started.id})\n`);
  let operation = started;
  let said = -1;
  while (operation.state === 'Running') {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    operation = await ctx.client.get<ApplyOperation>(`apply/operations/${encodeURIComponent(started.id)}`);
    if (operation.applied !== said && operation.state === 'Running') process.stderr.write(`${operation.applied}/${operation.total} applied\n`);
    said = operation.applied;
  }
  if (operation.state === 'Failed') {
    const error = operation.error;
    throw new ApiError(
      error?.status ?? 500,
      `${error?.error ?? 'the apply failed'} (${operation.applied} of ${operation.total} objects applied before it stopped; operation ${operation.id})`,
      error?.errors ?? [],
    );
  }
  return operation.results ?? [];
}
