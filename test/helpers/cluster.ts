import { startTestServer, type TestServer } from './server.js';
import { freePort } from './ssh-client.js';

export { until } from './until.js';

/** What every server of one test cluster shares: the cluster token and the master key. */
export const CLUSTER_TOKEN = 'test-cluster-token-0123456789abcdef0123';
export const CLUSTER_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * A server (node agent and API server) of a cluster sharing the database at `databaseUrl`: its own node name,
 * data dir, box subnet and port, the API URL other servers forward to, and the cluster's token and key.
 */
export async function startClusterServer(name: string, subnet: string, databaseUrl: string, env: Record<string, string> = {}): Promise<TestServer> {
  const port = await freePort();
  return startTestServer({
    DEVBOXD_DATABASE_URL: databaseUrl,
    DEVBOXD_NODE_NAME: name,
    DEVBOXD_PORT: String(port),
    DEVBOXD_API_URL: `http://127.0.0.1:${port}`,
    DEVBOXD_CLUSTER_TOKEN: CLUSTER_TOKEN,
    DEVBOXD_SECRET_KEY: CLUSTER_SECRET_KEY,
    DEVBOXD_BOX_SUBNET: subnet,
    ...env,
  });
}
