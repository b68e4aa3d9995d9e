import { flag, UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { cell, list, relative, table } from '../tables';
import { bindingName, WhatIfAnswer } from '../types';

function condition(text: string | undefined): { type: string; status: string } | undefined {
  if (text === undefined) return undefined;
  const m = /^([A-Za-z][\w.-]*)=(True|False|Unknown)$/.exec(text);
  if (!m) throw new UsageError(`--condition must be TYPE=STATUS with STATUS True, False or Unknown (got "${text}")`);
  return { type: m[1], status: m[2] };
}

const when = (iso: string | null) => (iso ? `${iso} (${relative(iso)})` : '<none>');

/** `what-if fail A B... [--condition Type=Status]`: what the server would do if those clusters failed now; writes nothing. */
export async function whatIf(ctx: Context): Promise<void> {
  const [verb, ...clusters] = ctx.args;
  if (verb !== 'fail') throw new UsageError('usage: what-if fail CLUSTER... [--condition TYPE=STATUS]');
  if (clusters.length === 0) throw new UsageError('what-if fail needs at least one cluster name');
  if (ctx.output === 'wide') throw new UsageError('what-if prints text, -o json or -o yaml');
  const cond = condition(flag(ctx.parsed, 'condition'));
  const data = await ctx.client.post<WhatIfAnswer>('whatif', { body: JSON.stringify({ failClusters: clusters, ...(cond ? { condition: cond } : {}) }) });
  if (ctx.output === 'json' || ctx.output === 'yaml') return await printData(data, ctx.output);
  process.stdout.write(render(data, clusters));
}

export function render(data: WhatIfAnswer, clusters: string[]): string {
  const c = data.condition ? ` (${data.condition.type}=${data.condition.status})` : '';
  const f = data.fleet;
  let text = `What if ${clusters.join(', ')} failed${c} at ${data.at}:\n\n`;
  text += data.taints.length
    ? `Taints that would land:\n${table(
        ['CLUSTER', 'TAINT', 'AT', 'POLICY'],
        data.taints.map((t) => [t.cluster, `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`, relative(t.at), cell(t.policy)]),
      )}`
    : 'Taints that would land: <none>\n';
  for (const u of data.untainted) text += `Not tainted: ${u.cluster}: ${u.why}\n`;
  text += `\nFleet: ${f.unhealthy}/${f.total} clusters unhealthy (${Math.round(f.failureRatio * 100)}%), tier ${f.tier}, rate ${f.rate} evictions/s`;
  text += data.heldBy ? `; evictions held (${data.heldBy})\n` : '\n';
  text += `\nEvictions (${data.counts.evictions}):${data.evictions.length ? '\n' : ' <none>\n'}`;
  if (data.evictions.length) {
    text += table(
      ['BINDING', 'FROM', 'DUE', 'SLOT', 'TARGETS'],
      data.evictions.map((e) => [
        bindingName(e.binding),
        e.cluster,
        relative(e.dueAt),
        relative(e.slot),
        list(e.targets.map((t) => `${t.name}(${t.replicas})`)),
      ]),
    );
  }
  text += `\nBlocked (${data.counts.blocked}):${data.blocked.length ? '\n' : ' <none>\n'}`;
  if (data.blocked.length) {
    text += table(
      ['BINDING', 'FROM', 'REASON'],
      data.blocked.map((b) => [bindingName(b.binding), b.cluster, cell(b.reason)]),
    );
  }
  text += `\nTolerated: ${data.counts.tolerated}\n`;
  text += `Already decided: ${data.counts.alreadyDecided}\n`;
  text += `ETA of the last eviction: ${data.heldBy ? `<none> (held: ${data.heldBy})` : when(data.eta)}\n`;
  return text;
}
