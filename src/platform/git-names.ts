import { ERRORS } from './errors.js';

// Git naming rules that code mounts (blueprints) and repository connections (repositories) both check: here,
// below the resources, so neither imports the other for them.

/** A GitHub owner or repository name: letters, digits, `-`, `_`, `.`; never `.` or `..` (they would leave the path). */
export const REPO_PART = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}$/;
export const TOKEN_MAX = 4096;

/** A ref git accepts as a branch or tag name (no option, no revision syntax, no whitespace). */
export const GIT_REF = /^(?!-)(?!.*\.\.)(?!.*[\s~^:?*[\\\x00-\x1f\x7f])(?!.*@\{)[^/].{0,254}$/;

export function checkRepoPart(v: string, field: string): void {
  if (!REPO_PART.test(v))
    throw ERRORS.invalid(`${field} must be 1 to 100 letters, digits, "-", "_" or "." (not "." or ".."), got ${JSON.stringify(v.slice(0, 120))}`);
}

export function checkToken(token: string, field: string): void {
  if (!token || token.length > TOKEN_MAX || /[\s\u0000]/.test(token))
    throw ERRORS.invalid(`${field} must be 1 to ${TOKEN_MAX} characters without whitespace or NUL`);
}
