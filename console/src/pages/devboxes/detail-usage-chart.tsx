// One usage series over time as a line: uPlot loads with this module only, which the devbox page imports once
// it has points to draw. The plot is made once and fed new points (a redraw per 2 s read, not a rebuild).
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  label: string;
  unit: string;
  /** [seconds, value]; a null value breaks the line (a gap while the box did not run). */
  points: [number, number | null][];
  digits: number;
}

const HEIGHT = 200;

const toData = (s: Series): uPlot.AlignedData => [s.points.map((p) => p[0]), s.points.map((p) => p[1])];

export default function UsageChart({ series }: { series: Series }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(280, el.clientWidth);
    const fmt = (v: number | null) => (v === null ? '—' : `${v.toFixed(series.digits)} ${series.unit}`);
    plot.current = new uPlot(
      {
        width: width(),
        height: HEIGHT,
        legend: { show: false },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max * 1.15, series.unit === '%' ? 5 : 1)] } },
        axes: [{}, { size: 60, values: (_u, ticks) => ticks.map((t) => `${t.toFixed(t < 10 ? 1 : 0)}`) }],
        series: [
          { label: 'time', value: (_u, v) => (v === null ? '—' : new Date(v * 1000).toLocaleTimeString()) },
          { label: series.label, stroke: '#0172ad', fill: 'rgba(1, 114, 173, 0.12)', width: 2, spanGaps: false, value: (_u, v) => fmt(v) },
        ],
      },
      toData(series),
      el,
    );
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: width(), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(toData(series));
  }, [series.points]);

  return <div ref={box} class="chart usage-chart" role="img" aria-label={`${series.label} over the time this page has been open`} />;
}
