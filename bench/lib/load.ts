import http from 'node:http';
import http2 from 'node:http2';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50ms: number;
  p99ms: number;
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * A closed-loop load generator: `concurrency` requests in flight at all times for `seconds`, over keep-alive
 * HTTP/1.1 connections or one HTTP/2 connection with many streams (how the SDK talks). Latency per request.
 */
export async function load(opts: {
  url: string;
  path: string;
  headers?: Record<string, string>;
  protocol: 'h1' | 'h2';
  concurrency: number;
  seconds: number;
}): Promise<LoadResult> {
  const base = new URL(opts.url);
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + opts.seconds * 1000;
  let one: () => Promise<number>;
  let close = () => {};
  if (opts.protocol === 'h2') {
    const session = http2.connect(base.origin);
    close = () => session.close();
    one = () =>
      new Promise((resolve, reject) => {
        const req = session.request({ ':path': opts.path, ...opts.headers });
        req.on('response', (h) => {
          req.resume();
          req.on('end', () => resolve(Number(h[':status'])));
        });
        req.on('error', reject);
        req.end();
      });
  } else {
    const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
    close = () => agent.destroy();
    one = () =>
      new Promise((resolve, reject) => {
        const req = http.get({ host: base.hostname, port: base.port, path: opts.path, headers: opts.headers, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
  }
  const worker = async () => {
    while (performance.now() < deadline) {
      const t = performance.now();
      try {
        const status = await one();
        if (status !== 200) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  close();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
  };
}
