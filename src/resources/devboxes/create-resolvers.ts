import { ERRORS } from '../../platform/errors.js';
import type { CreateResolver } from './extensions.js';

/**
 * The create resolvers for what devboxd does not store yet: any secret or blueprint a request names is
 * unknown (404). The secrets and blueprints resources replace these with resolvers that read their stores.
 */
export const unknownSecrets: CreateResolver = async (_accountId, input) => {
  for (const [envName, secret] of Object.entries(input.secrets ?? {})) {
    throw ERRORS.notFound('secret', `${secret} (for ${envName})`);
  }
  return undefined;
};

export const unknownBlueprints: CreateResolver = async (_accountId, input) => {
  if (input.blueprintId) throw ERRORS.notFound('blueprint', input.blueprintId);
  if (input.blueprintName) throw ERRORS.notFound('blueprint', input.blueprintName);
  return undefined;
};
