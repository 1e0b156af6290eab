import type { Static } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import { Body, EnvironmentMap, Opt, SecretRefsMap, Text } from '../../../platform/http/schemas/common.js';
import { mountsOf } from '../../devboxes/index.js';
import { LaunchParametersSchema, MountsSchema } from '../../../platform/http/schemas/shared.js';
import { refuseUnsupported, type CreateBody } from '../../devboxes/index.js';
import type { LaunchParameters } from '../../devboxes/index.js';
import type { RunProfile } from '../types.js';

/** Runloop's `runProfile`: what every scenario devbox of a run gets. */
export const RunProfileSchema = Body({
  purpose: Opt(Text(1024)),
  envVars: Opt(EnvironmentMap),
  secrets: Opt(SecretRefsMap()),
  launchParameters: Opt(LaunchParametersSchema),
  mounts: Opt(MountsSchema),
});

export type RunProfileWire = Static<typeof RunProfileSchema>;

/**
 * The profile in domain terms. Launch parameters and mounts pass the devbox create's own checks here, so a
 * parameter no devbox could take is a 400 before the run starts, not a failed scenario run later. Every mount
 * type reaches each scenario box; a benchmark run keeps its profile in the database until its last scenario
 * starts, so a mount's credential (code_mount `token`, agent_mount `auth_token`) is refused here, not stored
 * in plain: such a repository is reached through the account's git connection instead.
 */
export function toRunProfile(w: RunProfileWire | null | undefined): RunProfile {
  const launch = w?.launchParameters ?? null;
  refuseUnsupported({ launch_parameters: launch, mounts: w?.mounts } as CreateBody);
  const { objectMounts, fileMounts, codeMounts, agentMounts, brokerMounts } = mountsOf({ mounts: w?.mounts, file_mounts: undefined });
  for (const [i, m] of (w?.mounts ?? []).entries()) {
    const credential = m.type === 'code_mount' ? 'token' : m.type === 'agent_mount' ? 'auth_token' : null;
    if (credential && m[credential] != null)
      throw ERRORS.invalid(
        `runProfile.mounts[${i}].${credential}: a benchmark run keeps its profile, and a credential is not kept in plain; connect the repository to the account (repositories) instead`,
      );
  }
  return {
    purpose: w?.purpose ?? null,
    envVars: w?.envVars ?? {},
    secrets: w?.secrets ?? {},
    launchParameters: launch as LaunchParameters | null,
    mounts: objectMounts,
    otherMounts: { fileMounts, codeMounts, agentMounts, brokerMounts },
  };
}
