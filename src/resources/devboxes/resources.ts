import { ERRORS } from '../../platform/errors.js';
import type { ResourceLimits } from '../../runtime/driver.js';

const GiB = 1024 ** 3;

/** Named sizes (Runloop's names): CPU cores and memory GiB. Disk defaults to DEFAULT_DISK_GIB. */
export const SIZES = {
  X_SMALL: { cpu: 0.5, memGiB: 1 },
  SMALL: { cpu: 1, memGiB: 2 },
  MEDIUM: { cpu: 2, memGiB: 4 },
  LARGE: { cpu: 2, memGiB: 8 },
  X_LARGE: { cpu: 4, memGiB: 16 },
  XX_LARGE: { cpu: 8, memGiB: 32 },
} as const;
export type SizeName = keyof typeof SIZES | 'CUSTOM_SIZE';
export const DEFAULT_SIZE: SizeName = 'SMALL';
export const DEFAULT_DISK_GIB = 20;

interface SizeRequest {
  resource_size_request?: string | null;
  custom_cpu_cores?: number | null;
  custom_gb_memory?: number | null;
  custom_disk_size?: number | null;
}

/** What one box may ask for at most on this server (the host's size unless the operator overcommits). */
export interface HostCapacity {
  maxCpuCores: number;
  maxMemoryGiB: number;
}

/**
 * Resolves a size request to cgroup limits, refusing sizes the host can never give. CUSTOM_SIZE needs custom_cpu_cores and custom_gb_memory;
 * custom_disk_size (GiB) applies to every size. Process count scales with memory (1024 per GiB, ≥ 512).
 */
export function resolveLimits(p: SizeRequest, host: HostCapacity): ResourceLimits {
  const name = (p.resource_size_request ?? (p.custom_cpu_cores || p.custom_gb_memory ? 'CUSTOM_SIZE' : DEFAULT_SIZE)) as SizeName;
  let cpu: number;
  let memGiB: number;
  if (name === 'CUSTOM_SIZE') {
    if (!p.custom_cpu_cores || !p.custom_gb_memory) {
      throw ERRORS.invalid('launch_parameters: CUSTOM_SIZE needs custom_cpu_cores and custom_gb_memory');
    }
    cpu = p.custom_cpu_cores;
    memGiB = p.custom_gb_memory;
  } else if (name in SIZES) {
    ({ cpu, memGiB } = SIZES[name as keyof typeof SIZES]);
    if (p.custom_cpu_cores || p.custom_gb_memory) {
      throw ERRORS.invalid('launch_parameters: custom_cpu_cores and custom_gb_memory need resource_size_request CUSTOM_SIZE');
    }
  } else {
    throw ERRORS.invalid(`launch_parameters.resource_size_request: unknown size ${name}`);
  }
  if (cpu <= 0 || cpu > 64) throw ERRORS.invalid('launch_parameters.custom_cpu_cores must be between 1 and 64');
  if (memGiB <= 0 || memGiB > 256) throw ERRORS.invalid('launch_parameters.custom_gb_memory must be between 1 and 256');
  const field = name === 'CUSTOM_SIZE' ? 'launch_parameters.custom_*' : `launch_parameters.resource_size_request ${name}`;
  if (cpu > host.maxCpuCores || memGiB > host.maxMemoryGiB) {
    throw ERRORS.invalid(
      `${field} asks for ${cpu} CPU cores and ${memGiB} GiB; this server gives one devbox at most ${host.maxCpuCores} cores and ${host.maxMemoryGiB} GiB`,
    );
  }
  const diskGiB = p.custom_disk_size ?? DEFAULT_DISK_GIB;
  if (diskGiB <= 0 || diskGiB > 4096) throw ERRORS.invalid('launch_parameters.custom_disk_size must be between 1 and 4096');
  return {
    cpuCores: cpu,
    memoryBytes: memGiB * GiB,
    diskBytes: diskGiB * GiB,
    pids: Math.max(512, Math.round(memGiB * 1024)),
  };
}
