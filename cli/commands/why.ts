import { UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { table } from '../tables';
import { WhyAnswer } from '../types';
import { bindingPath, EVICTION_HEADERS, evictionRows } from './get';

/** `why binding NS/NAME` (or NAME for a ClusterResourceBinding): the explanation lines, then the ledger rows. */
export async function why(ctx: Context): Promise<void> {
  const [what, ref, ...extra] = ctx.args;
  if (!what || !['binding', 'rb', 'crb', 'resourcebinding', 'clusterresourcebinding'].includes(what.toLowerCase())) {
    throw new UsageError('usage: why binding NAMESPACE/NAME (or NAME for a ClusterResourceBinding)');
  }
  if (!ref) throw new UsageError('why binding needs NAMESPACE/NAME (or NAME for a ClusterResourceBinding)');
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (ctx.output === 'wide') throw new UsageError('why prints text, -o json or -o yaml');
  const data = await ctx.client.get<WhyAnswer>(`${bindingPath(ref).path}/why`);
  if (ctx.output === 'json' || ctx.output === 'yaml') return await printData(data, ctx.output);
  let text = data.explanation.map((line) => `${line}\n`).join('');
  if (data.evictions.length > 0) text += `\n${table(EVICTION_HEADERS, evictionRows(data.evictions))}`;
  else text += '\nNo eviction rows.\n';
  process.stdout.write(text);
}
