// The box's CPU and memory over the time this page is open: `usage` answers the box's live counters
// (`cpu_micros`, the CPU time used so far, and `memory_bytes`), read every 2 s while the box runs. CPU % is
// the CPU time used between two reads over the wall time between them (100 % is one core busy). uPlot loads
// with the chart module, once there are points to draw.
import type { FunctionComponent } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../../api';
import { bytes, ErrorNote } from '../../ui/common';
import { useInterval } from '../../ui/use-load';
import type { Series } from './detail-usage-chart';

const EVERY_MS = 2000;
/** An hour of points: the chart covers the time the page is open, up to that. */
const KEEP = 1800;

interface Usage {
  status: string;
  cpu_micros: number | null;
  memory_bytes: number | null;
}

interface Point {
  /** Seconds, as uPlot's time axis counts. */
  t: number;
  cpu: number | null;
  mem: number | null;
}

export function UsageCharts({ devboxId, running }: { devboxId: string; running: boolean }) {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<string | null>(null);
  const last = useRef<{ atMs: number; cpu: number } | null>(null);
  const [Chart, setChart] = useState<FunctionComponent<{ series: Series }> | null>(null);

  const read = async () => {
    try {
      const u = await get<Usage>(`/v1/devboxes/${devboxId}/usage`);
      const now = Date.now();
      const prev = last.current;
      // A resumed box counts its CPU time from zero again, and a pause (a hidden tab, a suspend) is a gap,
      // not a slope: both start the line afresh.
      const fresh = !prev || u.cpu_micros === null || u.cpu_micros < prev.cpu || now - prev.atMs > EVERY_MS * 3;
      const cpu = fresh || u.cpu_micros === null ? null : ((u.cpu_micros - prev.cpu) / ((now - prev.atMs) * 1000)) * 100;
      last.current = u.cpu_micros === null ? null : { atMs: now, cpu: u.cpu_micros };
      const mem = u.memory_bytes === null ? null : u.memory_bytes / 2 ** 20;
      const point = { t: now / 1000, cpu, mem };
      setPoints((ps) => (fresh && ps.length ? [...ps, { t: point.t - 0.001, cpu: null, mem: null }, point] : [...ps, point]).slice(-KEEP));
      setError(null);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };

  useEffect(() => {
    if (running) void read();
  }, [devboxId, running]);
  useInterval(read, running ? EVERY_MS : null);

  useEffect(() => {
    if (points.length > 1 && !Chart) void import('./detail-usage-chart').then((m) => setChart(() => m.default));
  }, [points.length > 1]);

  const latest = points[points.length - 1];
  const lastCpu = [...points].reverse().find((p) => p.cpu !== null)?.cpu;
  return (
    <>
      {!running && points.length === 0 ? (
        <p>The charts draw while the box is running: they read its CPU and memory every 2 seconds while this page is open.</p>
      ) : Chart && points.length > 1 ? (
        <div class="grid">
          <figure>
            <Chart series={{ label: 'CPU %', unit: '%', points: points.map((p) => [p.t, p.cpu]), digits: 1 }} />
            <figcaption>CPU, % of one core{lastCpu != null ? `: ${lastCpu.toFixed(1)} % now` : ''}</figcaption>
          </figure>
          <figure>
            <Chart series={{ label: 'Memory MiB', unit: 'MiB', points: points.map((p) => [p.t, p.mem]), digits: 1 }} />
            <figcaption>Memory{latest?.mem != null ? `: ${bytes(latest.mem * 2 ** 20)} now` : ''}</figcaption>
          </figure>
        </div>
      ) : (
        <p aria-busy="true">Reading the box's CPU and memory…</p>
      )}
      <small>
        These charts cover the time this page has been open (a point every 2 seconds while the box runs), not the box's whole life.
        {!running && points.length > 0 ? ' The box is not running: no new points.' : ''}
      </small>
      <ErrorNote error={error} />
    </>
  );
}
