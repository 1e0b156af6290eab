import type { BoxServices } from '../../platform/boxlink/index.js';
import type { BeforeCreate, StopListener } from './extensions.js';

/**
 * What the box-services link contributes to the devbox lifecycle: every boot (create and resume) makes the
 * box's socket before its sandbox, which the runtime links as it creates the sandbox (no call of its own),
 * and the link goes with the box's processes (shutdown, failure, suspend). Boxes adopted after a restart are
 * linked by the module's `relink`. The platform provides the link and this resource wires it into its
 * lifecycle, so this lives here and platform/boxlink knows no resource.
 */
export function boxServicesExtensions(services: () => BoxServices): { beforeCreate: BeforeCreate; onStopped: StopListener } {
  return {
    beforeCreate: async (devbox) => {
      const target = await services().open(devbox.id);
      return target && { services: target };
    },
    onStopped: (devboxId) => void services().unlink(devboxId),
  };
}
