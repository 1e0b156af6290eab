// The score of each run of a benchmark over time, as points on a line: uPlot loads with this module only,
// which the benchmark page imports when it has scored runs to draw.
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface ScoredRun {
  startMs: number;
  score: number;
  name: string;
}

export default function ScoresChart({ runs }: { runs: ScoredRun[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const sorted = [...runs].sort((a, b) => a.startMs - b.startMs);
    const data: uPlot.AlignedData = [sorted.map((r) => r.startMs / 1000), sorted.map((r) => r.score)];
    const width = () => Math.max(320, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 240,
        scales: { x: { time: true }, y: { range: [0, 1] } },
        axes: [{}, { label: 'score', values: (_u, ticks) => ticks.map((t) => t.toFixed(1)) }],
        series: [
          { label: 'started', value: (_u, v) => (v === null ? '—' : new Date(v * 1000).toLocaleString()) },
          {
            label: 'score',
            stroke: '#0172ad',
            width: 2,
            points: { show: true, size: 8, fill: '#0172ad' },
            value: (_u, v) => (v === null ? '—' : v.toFixed(2)),
          },
        ],
      },
      data,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [runs]);
  return <div ref={box} class="chart" />;
}
