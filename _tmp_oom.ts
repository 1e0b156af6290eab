import fs from 'node:fs';
import { SqlRunner } from './src/resources/axons/sql-runner.js';
import { SQL_LIMITS } from './src/resources/axons/index.js';
import { createLogger } from './src/lib/logger.js';
fs.rmSync('/tmp/axsql-d', { recursive: true, force: true });
fs.mkdirSync('/tmp/axsql-d', { mode: 0o700 });
const r = new SqlRunner({ ...SQL_LIMITS, timeoutMs: 120000 }, '/tmp/axsql-d/axons', createLogger('silent'));
r.createDatabase('axn_1');
let t = performance.now();
await r.run('a', 'axn_1', [{ sql: 'SELECT 1', params: [] }], false);
console.log('first job (compile + start)', (performance.now() - t).toFixed(0), 'ms');
for (const pid of r.pids()) { const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); console.log('child cpu ms', (Number(st[11]) + Number(st[12])) * 10); }
for (const sql of [process.argv[2]!, 'SELECT 3']) {
  t = performance.now();
  try { const res = await r.run('a', 'axn_1', [{ sql, params: [] }], false); console.log(sql, JSON.stringify(res).slice(0, 300)); } catch (e) { console.log(sql, 'ERR', (e as Error).constructor.name, (e as { code?: string }).code, (e as Error).message); }
  console.log((performance.now() - t).toFixed(0), 'ms');
}
r.close();
