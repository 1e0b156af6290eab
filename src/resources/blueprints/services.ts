/**
 * A blueprint's containerized services (`services`): what a request may name, and what views show of them.
 * Each runs, when a devbox names it in `launch_parameters.required_services`, as a sidecar sandbox from its
 * image sharing the box's network namespace (service-sidecars.ts).
 */
import { ERRORS } from '../../platform/errors.js';
import { parseReference } from '../../runtime/oci/reference.js';
import { serviceOptions } from './service-options.js';
import type { Blueprint, ServiceSpec } from './types.js';

export type { ServiceSpec };

/** Services one blueprint may have: each running one costs a sandbox with its own limits (SERVICE_LIMITS). */
export const MAX_SERVICES = 8;
/** Lower-case like a container name: it is also the sidecar's host name. */
export const SERVICE_NAME = '^[a-z0-9][a-z0-9_-]{0,62}$';
/** Ports below this are privileged in the box's network namespace, which a service does not own. */
const FIRST_PORT = 1024;

/**
 * The ports a service's `port_mappings` name (`5432`, `5432:5432`, `5432/tcp`). The service shares the box's
 * network: the box reaches it on the port it listens on, so a mapping that would move it (`5433:5432`) is
 * refused rather than silently not applied.
 */
export function servicePorts(s: ServiceSpec, field: string): number[] {
  return (s.port_mappings ?? []).map((m, j) => {
    const match = /^(\d{1,5})(?::(\d{1,5}))?(?:\/tcp)?$/.exec(m);
    const where = `${field}.port_mappings[${j}]`;
    if (!match) throw ERRORS.invalid(`${where}: ${JSON.stringify(m)} is not <host_port>:<container_port> (TCP)`);
    const host = Number(match[1]);
    const port = Number(match[2] ?? match[1]);
    if (host !== port) {
      throw ERRORS.invalid(`${where}: services share the devbox's network, so the box reaches the service on the port it listens on; give ${port}:${port}`);
    }
    if (port < FIRST_PORT || port > 65535)
      throw ERRORS.invalid(`${where}: port ${port} is not in ${FIRST_PORT}-65535 (lower ports are privileged in the box's network)`);
    return port;
  });
}

/**
 * Refuses (400) what a blueprint's services cannot be: duplicate names, bad images, options a sidecar cannot
 * take (service-options.ts), moved ports, and
 * a port two of them name (they share the box's network: one would fail to bind, yet look ready by the other).
 */
export function checkServices(services: ServiceSpec[], requiredByDefault: unknown): void {
  const names = new Set<string>();
  const owners = new Map<number, string>();
  services.forEach((s, i) => {
    const field = `services[${i}]`;
    if (names.has(s.name)) throw ERRORS.invalid(`${field}.name: a service named ${s.name} comes earlier`);
    names.add(s.name);
    try {
      parseReference(s.image);
    } catch (err) {
      throw ERRORS.invalid(`${field}.image: ${(err as Error).message}`);
    }
    serviceOptions(s.options, `${field}.options`);
    servicePorts(s, field).forEach((port, j) => {
      const owner = owners.get(port);
      if (owner) throw ERRORS.invalid(`${field}.port_mappings[${j}]: port ${port} is also ${owner}'s; services share the devbox's network`);
      owners.set(port, field);
    });
  });
  checkRequired(services, requiredByDefault, 'launch_parameters.required_services');
}

/** Refuses (400) required service names the blueprint does not have. */
export function checkRequired(services: ServiceSpec[], required: unknown, field: string): void {
  if (!Array.isArray(required)) return;
  for (const name of required as string[]) {
    if (!services.some((s) => s.name === name)) {
      throw ERRORS.invalid(
        `${field}: no service named ${JSON.stringify(name)}${services.length ? ` (the blueprint has ${services.map((s) => s.name).join(', ')})` : ' (the blueprint has none)'}`,
      );
    }
  }
  if (new Set(required).size !== required.length) throw ERRORS.invalid(`${field}: a service is named twice`);
}

export const servicesOf = (b: Blueprint): ServiceSpec[] => (b.parameters.services ?? []) as ServiceSpec[];

/** A service as views show it: never its credentials. */
export const serviceView = (s: ServiceSpec) => ({
  name: s.name,
  image: s.image,
  env: s.env ?? null,
  options: s.options ?? null,
  port_mappings: s.port_mappings ?? null,
});
