import type { BootStep, StopListener } from '../../resources/devboxes/extensions.js';
import type { BoxServices } from './box-services.js';

/**
 * What the box-services link contributes to the devbox lifecycle: every boot (create and resume) links the
 * box before its launch commands run, and the link goes with the box's processes (shutdown, failure,
 * suspend). Boxes adopted after a restart are linked by `linkAdopted`.
 */
export function boxServicesExtensions(services: () => BoxServices): { bootStep: BootStep; onStopped: StopListener } {
  return {
    bootStep: {
      name: 'box services link',
      quiet: true,
      applies: () => true,
      async run({ devbox }) {
        await services().link(devbox.id);
      },
    },
    onStopped: (devboxId) => void services().unlink(devboxId),
  };
}
