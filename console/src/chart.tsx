import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { plural, rate } from './format';
import type { History, Tier } from './types';

const TIER_LEVEL: Record<Tier, number> = { halted: 0, secondary: 1, primary: 2 };
const TIER_NAME = ['halted', 'secondary', 'primary'];

/**
 * Evictions per second (left axis) and the fleet tier (right axis, a step line) over the history window.
 * The canvas is decorative for assistive technology: the figure's caption and the data table carry it.
 */
export function HistoryChart({ history }: { history: History }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data: uPlot.AlignedData = [
    history.points.map((p) => Date.parse(p.at) / 1000),
    history.points.map((p) => p.evictionsPerSecond),
    history.points.map((p) => TIER_LEVEL[p.tier] ?? null),
  ];

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(320, Math.min(el.clientWidth || 720, 1100));
    const opts: uPlot.Options = {
      width: width(),
      height: 220,
      legend: { show: false },
      cursor: { show: true, drag: { x: false, y: false } },
      scales: { x: { time: true }, eps: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] }, tier: { range: [-0.2, 2.2] } },
      axes: [
        {
          stroke: '#1f2933',
          grid: { stroke: '#e4e7eb' },
          values: (_u, splits) => splits.map((v) => new Date(v * 1000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', hour12: false })),
        },
        { scale: 'eps', stroke: '#1f2933', label: 'evictions/s', grid: { stroke: '#e4e7eb' } },
        {
          scale: 'tier',
          side: 1,
          stroke: '#1f2933',
          label: 'tier',
          grid: { show: false },
          splits: () => [0, 1, 2],
          values: (_u, splits) => splits.map((v) => TIER_NAME[v] ?? ''),
          size: 80,
        },
      ],
      series: [
        {},
        { label: 'evictions/s', scale: 'eps', stroke: '#0b5cad', width: 2, fill: 'rgba(11, 92, 173, 0.12)' },
        { label: 'tier', scale: 'tier', stroke: '#b3261e', width: 2, dash: [6, 4], paths: uPlot.paths.stepped?.({ align: 1 }) },
      ],
    };
    const chart = new uPlot(opts, data, el);
    plot.current = chart;
    const onResize = () => chart.setSize({ width: width(), height: 220 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      chart.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const peak = history.points.reduce((m, p) => Math.max(m, p.evictionsPerSecond), 0);
  const tiers = [...new Set(history.points.map((p) => p.tier))];
  const last = history.points[history.points.length - 1];
  return (
    <figure class="chart">
      <div ref={box} aria-hidden="true" class="chart-canvas" />
      <figcaption>
        Evictions per second (blue, left axis) and the fleet tier (red steps, right axis) over the last{' '}
        {plural(Math.round((Date.parse(history.to) - Date.parse(history.from)) / 60000), 'minute')}, in {history.bucketSeconds} s buckets. Peak {rate(peak)};
        tiers seen: {tiers.join(', ') || 'none'}
        {last ? `; now ${last.tier}` : ''}.
      </figcaption>
    </figure>
  );
}
