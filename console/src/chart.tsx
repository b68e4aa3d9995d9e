import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { plural, rate, timestamp } from './format';
import type { History, Tier } from './types';

const TIER_LEVEL: Record<Tier, number> = { halted: 0, secondary: 1, primary: 2 };
const TIER_NAME = ['halted', 'secondary', 'primary'];
/** The ranges the selector offers, in minutes back from the end of the history. */
const LAST = [5, 15, 30];

/** What the chart shows: the whole history, its last minutes, or a range dragged across the canvas (epoch seconds). */
type Zoom = { kind: 'all' } | { kind: 'last'; minutes: number } | { kind: 'drag'; min: number; max: number };

const clock = (seconds: number) => timestamp(new Date(seconds * 1000).toISOString()).slice(11);

/**
 * Evictions per second (left axis) and the fleet tier (right axis, a step line) over the history window,
 * with a zoom: a range selector (the last 5, 15 or 30 minutes), drag-to-zoom across the canvas, and a
 * reset (the button, or a double-click on the canvas). A zoom holds across refreshes (the last minutes
 * move with the history). The canvas is decorative for assistive technology: the caption says the range
 * shown and what is in it; the selector and the reset are buttons.
 */
export function HistoryChart({ history }: { history: History }) {
  const box = useRef<HTMLDivElement>(null);
  const figure = useRef<HTMLElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dragging = useRef(false);
  const pending = useRef<(() => void) | null>(null);
  const [zoom, setZoom] = useState<Zoom>({ kind: 'all' });
  const data: uPlot.AlignedData = [
    history.points.map((p) => Date.parse(p.at) / 1000),
    history.points.map((p) => p.evictionsPerSecond),
    history.points.map((p) => TIER_LEVEL[p.tier as Tier] ?? null),
  ];
  const times = data[0] as number[];
  const first = times[0] ?? Date.parse(history.from) / 1000;
  const last = times[times.length - 1] ?? Date.parse(history.to) / 1000;
  const end = Math.max(last, Date.parse(history.to) / 1000);
  const range =
    zoom.kind === 'last' ? { min: Math.max(first, end - zoom.minutes * 60), max: end } : zoom.kind === 'drag' ? { min: zoom.min, max: zoom.max } : undefined;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(320, Math.min(el.clientWidth || 720, 1100));
    const opts: uPlot.Options = {
      width: width(),
      height: 220,
      legend: { show: false },
      cursor: {
        show: true,
        // A drag selects a range; the hook below makes it the zoom (kept in state, so refreshes keep it).
        drag: { x: true, y: false, setScale: false },
        bind: {
          dblclick: () => () => {
            setZoom({ kind: 'all' });
            return null;
          },
        },
      },
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
      hooks: {
        setSelect: [
          (u) => {
            const { left, width: w } = u.select;
            if (w < 3) return;
            const min = u.posToVal(left, 'x');
            const max = u.posToVal(left + w, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            if (max > min) setZoom({ kind: 'drag', min, max });
          },
        ],
        // The x range drawn, on the figure: what a test (or a curious reader of the DOM) can check.
        setScale: [
          (u, key) => {
            const fig = figure.current;
            const { min, max } = u.scales.x;
            if (key !== 'x' || !fig || min === undefined || max === undefined) return;
            fig.dataset.xMin = String(Math.round(min));
            fig.dataset.xMax = String(Math.round(max));
          },
        ],
      },
    };
    const chart = new uPlot(opts, data, el);
    plot.current = chart;
    const onResize = () => chart.setSize({ width: width(), height: 220 });
    const onDown = () => {
      dragging.current = true;
    };
    // After uPlot's own mouseup (which turns the drag into a selection).
    const onUp = () =>
      setTimeout(() => {
        dragging.current = false;
        const draw = pending.current;
        pending.current = null;
        draw?.();
      });
    window.addEventListener('resize', onResize);
    chart.over.addEventListener('mousedown', onDown);
    document.addEventListener('mouseup', onUp);
    return () => {
      window.removeEventListener('resize', onResize);
      chart.over.removeEventListener('mousedown', onDown);
      document.removeEventListener('mouseup', onUp);
      chart.destroy();
      plot.current = null;
    };
  }, []);

  // New data or a new range: drawn now, or when a drag in progress ends (a refresh must not move the canvas under it).
  useEffect(() => {
    const draw = () => {
      const chart = plot.current;
      if (!chart) return;
      chart.setData(data);
      if (range) chart.setScale('x', range);
    };
    if (dragging.current) pending.current = draw;
    else draw();
  }, [history, range?.min, range?.max]);

  const shown = range ? history.points.filter((p) => Date.parse(p.at) / 1000 >= range.min && Date.parse(p.at) / 1000 <= range.max) : history.points;
  const peak = shown.reduce((m, p) => Math.max(m, p.evictionsPerSecond), 0);
  const tiers = [...new Set(shown.map((p) => p.tier))];
  const now = history.points[history.points.length - 1];
  const minutes = Math.round((Date.parse(history.to) - Date.parse(history.from)) / 60000);
  return (
    <figure class="chart" ref={figure} data-zoom={zoom.kind === 'last' ? `last-${zoom.minutes}` : zoom.kind}>
      <div class="chart-controls" role="group" aria-label="Range of the chart">
        <span>Show:</span>
        {LAST.filter((m) => m < minutes).map((m) => (
          <button key={m} type="button" aria-pressed={zoom.kind === 'last' && zoom.minutes === m} onClick={() => setZoom({ kind: 'last', minutes: m })}>
            Last {m} min
          </button>
        ))}
        <button type="button" aria-pressed={zoom.kind === 'all'} onClick={() => setZoom({ kind: 'all' })}>
          All {minutes} min
        </button>
        {zoom.kind !== 'all' ? (
          <button type="button" onClick={() => setZoom({ kind: 'all' })}>
            Reset zoom
          </button>
        ) : null}
        <span class="small">or drag across the chart to zoom in (double-click to reset).</span>
      </div>
      <div ref={box} aria-hidden="true" class="chart-canvas" />
      <figcaption data-testid="chart-caption">
        Evictions per second (blue, left axis) and the fleet tier (red steps, right axis) over the last {plural(minutes, 'minute')}, in {history.bucketSeconds}{' '}
        s buckets.{' '}
        {range
          ? `Showing ${clock(range.min)}–${clock(range.max)} (${zoom.kind === 'last' ? `the last ${zoom.minutes} minutes` : 'zoomed in'}; Reset zoom shows it all). `
          : ''}
        Peak {rate(peak)}
        {range ? ' in that range' : ''}; tiers seen: {tiers.join(', ') || 'none'}
        {now ? `; now ${now.tier}` : ''}.
      </figcaption>
    </figure>
  );
}
