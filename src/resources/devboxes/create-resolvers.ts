import { ERRORS } from '../../platform/errors.js';
import type { CreateResolver } from './extensions.js';

/**
 * The create resolver for what devboxd does not store yet: any blueprint a request names is unknown (404).
 * The blueprints resource replaces it with a resolver that reads its store (secrets: secrets/devbox-extensions.ts).
 */
export const unknownBlueprints: CreateResolver = async (_accountId, input) => {
  if (input.blueprintId) throw ERRORS.notFound('blueprint', input.blueprintId);
  if (input.blueprintName) throw ERRORS.notFound('blueprint', input.blueprintName);
  return undefined;
};
