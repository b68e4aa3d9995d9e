import { describe, expect, it } from 'vitest';
import { SharedPass } from '../../shared/concurrency';

/** SharedPass: callers share a pass that began after their ticket; passes never overlap; failures are not shared. */

function gatedPass() {
  const log: string[] = [];
  const gates: Array<() => void> = [];
  let n = 0;
  const pass = new SharedPass(async () => {
    const id = ++n;
    log.push(`start ${id}`);
    await new Promise<void>((resolve) => gates.push(resolve));
    log.push(`end ${id}`);
    return id;
  });
  const open = async () => {
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 1));
    gates.shift()!();
  };
  return { pass, log, open };
}

describe('SharedPass', () => {
  it.each([
    ['a ticket taken before the running pass began joins it', true],
    ['a ticket taken after it began waits for it, then gets a pass of its own', false],
  ])('%s', async (_name, before) => {
    const { pass, log, open } = gatedPass();
    const early = pass.ticket();
    const first = pass.after(early);
    const late = pass.after(before ? early : pass.ticket());
    await open();
    if (!before) await open();
    expect(await first).toBe(1);
    expect(await late).toBe(before ? 1 : 2);
    expect(log).toEqual(before ? ['start 1', 'end 1'] : ['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('callers that arrive while a pass runs all share the one pass waiting to begin: two passes, not one each', async () => {
    const { pass, log, open } = gatedPass();
    const first = pass.after(pass.ticket());
    const late = [pass.after(pass.ticket()), pass.after(pass.ticket()), pass.after(pass.ticket())];
    await open();
    await open();
    expect(await first).toBe(1);
    expect(await Promise.all(late)).toEqual([2, 2, 2]);
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('a finished pass serves a caller whose ticket predates it', async () => {
    const { pass, open } = gatedPass();
    const ticket = pass.ticket();
    const first = pass.after(ticket);
    await open();
    await first;
    expect(await pass.after(ticket)).toBe(1);
  });

  it('a failed pass is not shared: the next caller starts another', async () => {
    let calls = 0;
    const pass = new SharedPass(async () => {
      calls++;
      if (calls === 1) throw new Error('storage down');
      return calls;
    });
    const ticket = pass.ticket();
    await expect(pass.after(ticket)).rejects.toThrow('storage down');
    expect(await pass.after(ticket)).toBe(2);
  });
});
