import { UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { AcknowledgeAnswer, DrainAnswer, SwitchAnswer, UncordonAnswer } from '../types';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function noArgs(ctx: Context, command: string): void {
  if (ctx.args.length > 0) throw new UsageError(`${command} takes no argument (got "${ctx.args[0]}")`);
}

function oneCluster(ctx: Context, command: string): string {
  if (ctx.args.length === 0) throw new UsageError(`${command} needs a cluster name`);
  if (ctx.args.length > 1) throw new UsageError(`${command} takes one cluster (got "${ctx.args[1]}" too)`);
  return ctx.args[0];
}

async function answer<T>(ctx: Context, data: T, line: string): Promise<void> {
  if (ctx.output === 'json' || ctx.output === 'yaml') await printData(data, ctx.output);
  else process.stdout.write(`${line}\n`);
}

/** `pause` / `resume`: stop or restart evictions fleet-wide. */
export async function failoverSwitch(ctx: Context, action: 'pause' | 'resume'): Promise<void> {
  noArgs(ctx, action);
  const data = await ctx.client.post<SwitchAnswer>(`failover/${action}`);
  const disabled = data.failoverEnabled ? '' : ' (failover is disabled on the server: FAILOVER_ENABLED=false)';
  await answer(ctx, data, `evictions ${data.paused ? 'paused' : 'resumed'}${disabled}`);
}

/** `drain CLUSTER`: cordon it and plan evictions of everything on it. */
export async function drain(ctx: Context): Promise<void> {
  const cluster = oneCluster(ctx, 'drain');
  const data = await ctx.client.post<DrainAnswer>(`clusters/${encodeURIComponent(cluster)}/drain`);
  const already = data.alreadyDecided > 0 ? `; ${data.alreadyDecided} already decided` : '';
  await answer(ctx, data, `cluster/${data.cluster} ${data.cordoned ? 'cordoned' : 'already cordoned'}; ${plural(data.planned, 'eviction')} planned${already}`);
}

/** `acknowledge policy NAME`: accept a ClusterTaintPolicy's exceeded blast radius (idempotent). */
export async function acknowledge(ctx: Context): Promise<void> {
  const [what, name, extra] = ctx.args;
  if (what === undefined) throw new UsageError('acknowledge needs what to acknowledge: acknowledge policy NAME');
  if (!['policy', 'policies', 'clustertaintpolicy', 'clustertaintpolicies'].includes(what))
    throw new UsageError(`cannot acknowledge "${what}"; use: acknowledge policy NAME`);
  if (name === undefined) throw new UsageError('acknowledge policy needs a policy name');
  if (extra !== undefined) throw new UsageError(`acknowledge policy takes one policy (got "${extra}" too)`);
  const data = await ctx.client.post<AcknowledgeAnswer>(`clustertaintpolicies/${encodeURIComponent(name)}/acknowledge`);
  const line = data.changed
    ? `clustertaintpolicy/${data.name} acknowledged` + (data.reevaluated.length > 0 ? `; ${plural(data.reevaluated.length, 'cluster')} evaluated again` : '')
    : data.acknowledged
      ? `clustertaintpolicy/${data.name} already acknowledged`
      : `clustertaintpolicy/${data.name}: nothing to acknowledge (BlastRadiusExceeded is False)`;
  await answer(ctx, data, line);
}

/** `uncordon CLUSTER`: remove the cordon taint; pending drain evictions are abandoned. */
export async function uncordon(ctx: Context): Promise<void> {
  const cluster = oneCluster(ctx, 'uncordon');
  const data = await ctx.client.post<UncordonAnswer>(`clusters/${encodeURIComponent(cluster)}/uncordon`);
  await answer(
    ctx,
    data,
    `cluster/${data.cluster} ${data.uncordoned ? 'uncordoned' : 'was not cordoned'}; ${plural(data.abandoned, 'pending eviction')} abandoned` +
      (data.abandonedAtSlot > 0 ? `, ${plural(data.abandonedAtSlot, 'scheduled eviction')} abandoned at its slot` : ''),
  );
}
