// The MCP hub: p50/p99 of a `tools/call` from inside a box through the hub (box-services link → hub → the
// SDK's client → upstream), next to the same call from the host straight to the same upstream, with the
// same client (Python's http.client, keep-alive), in the same run, in alternating rounds. The upstream is a real MCP server (the
// official SDK, Streamable HTTP, JSON answers) on 127.0.0.1 in this process.
// Run: node --import tsx bench/mcp-hub.ts   (BENCH_N=2000 calls)
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startUpstreamMcp } from '../test/helpers/mcp-upstream.js';
import { startTestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const N = Number(process.env.BENCH_N ?? 2000);
const ROUNDS = 10;

const CLIENT = `
import http.client, json, sys, time, urllib.parse
url, token, tool, n = urllib.parse.urlsplit(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if token:
    headers["Authorization"] = "Bearer " + token
c = http.client.HTTPConnection(url.hostname, url.port)
out = []
for i in range(n + 50):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "x"}}})
    t = time.perf_counter()
    c.request("POST", url.path, body, headers)
    r = c.getresponse()
    data = json.loads(r.read())
    if "result" not in data:
        raise SystemExit("call failed: " + json.dumps(data))
    if i >= 50:
        out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
`;

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
};

const upstream = await startUpstreamMcp('gh');
const server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn' });
const api = server.client({ maxRetries: 0 });
await api.secrets.create({ name: 'BENCH_PAT', value: 'bench-credential' });
await api.mcpConfigs.create({ name: 'github-bench', endpoint: upstream.url, allowed_tools: ['gh_echo'], custom_headers: [{ name: 'X-Team', value: 'bench' }] });
const box = await api.devboxes.createAndAwaitRunning({ mcp: { GH: { mcp_config: 'github-bench', secret: 'BENCH_PAT' } } });
await api.devboxes.writeFileContents(box.id, { file_path: '/tmp/client.py', contents: CLIENT });
const clientFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-bench-')), 'client.py');
fs.writeFileSync(clientFile, CLIENT);

/** N/ROUNDS calls from inside the box, through the hub. */
async function throughHub(n: number): Promise<number[]> {
  const run = await api.devboxes.executeAsync(box.id, { command: `python3 /tmp/client.py "$RL_MCP_URL" "$GH" github-gh_echo ${n}` });
  const done = await api.devboxes.executions.awaitCompleted(box.id, run.execution_id, { timeout: 600_000 } as never);
  if (done.exit_status !== 0) throw new Error(`client in the box failed: ${done.stderr}`);
  return JSON.parse((await api.devboxes.executions.retrieve(box.id, run.execution_id, { last_n: '1' })).stdout!) as number[];
}

/** The same calls from the host straight to the upstream, off the event loop of this process (which runs it). */
function direct(n: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    execFile('python3', [clientFile, upstream.url, '', 'gh_echo', String(n)], { maxBuffer: 64 << 20 }, (err, out) =>
      err ? reject(err) : resolve(JSON.parse(out) as number[]),
    );
  });
}

// Alternating rounds, so load from elsewhere on the machine falls on both sides alike.
const samples = { direct: [] as number[], hub: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  samples.direct.push(...(await direct(N / ROUNDS)));
  samples.hub.push(...(await throughHub(N / ROUNDS)));
}
fs.rmSync(path.dirname(clientFile), { recursive: true, force: true });

const a = stats(samples.direct);
const b = stats(samples.hub);
console.log(`\n| path (${N} tools/call, keep-alive) | p50 ms | p99 ms | added p50 ms |`);
console.log('|---|---|---|---|');
console.log(`| host → upstream MCP server | ${a.p50.toFixed(3)} | ${a.p99.toFixed(3)} | baseline |`);
console.log(`| box → link → MCP hub → upstream | ${b.p50.toFixed(3)} | ${b.p99.toFixed(3)} | ${(b.p50 - a.p50).toFixed(3)} |`);
await api.devboxes.shutdown(box.id);
await server.stop();
await upstream.close();
