import type { BoxServices } from '../../platform/boxlink/index.js';
import type { BootStep, StopListener } from './extensions.js';

/**
 * What the box-services link contributes to the devbox lifecycle: every boot (create and resume) links the
 * box before its launch commands run, and the link goes with the box's processes (shutdown, failure,
 * suspend). Boxes adopted after a restart are linked by `linkAdopted`. The platform provides the link and this resource wires it into its
 * lifecycle, so this lives here and platform/boxlink knows no resource.
 */
export function boxServicesExtensions(services: () => BoxServices): { bootStep: BootStep; onStopped: StopListener } {
  return {
    bootStep: {
      name: 'box services link',
      quiet: true,
      alongside: true,
      applies: () => true,
      async run({ devbox }) {
        await services().link(devbox.id);
      },
    },
    onStopped: (devboxId) => void services().unlink(devboxId),
  };
}
