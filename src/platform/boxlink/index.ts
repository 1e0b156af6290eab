export { BoxServices, sendJson, type BoxServiceHandler, type BoxServicesOptions } from './box-services.js';

/** Where a box reaches the box services: `${boxServicesUrl(config)}/mcp` is the MCP hub's URL inside a box. */
export function boxServicesUrl(config: { boxServicesPort: number }): string {
  return `http://127.0.0.1:${config.boxServicesPort}`;
}
