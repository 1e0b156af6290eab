import { Type } from 'typebox';
import { ERRORS } from '../../platform/errors.js';

/** PATH_MAX of Linux, the terminating NUL included: a path string holds at most 4095 bytes. */
export const PATH_MAX = 4096;
/** A path in a request body, as documented: the bound the server holds it to (`checkPath` counts its bytes). */
export const PathString = () => Type.String({ maxLength: PATH_MAX - 1, description: `at most ${PATH_MAX - 1} bytes (Linux PATH_MAX, less its NUL)` });
/** NAME_MAX of Linux: the longest single path component, in bytes. */
export const NAME_MAX = 255;

/**
 * Refuses a path the kernel would refuse anyway (ENAMETOOLONG) or that no system call can carry (NUL), with
 * a 400 naming the request field, before a process starts in the box.
 */
export function checkPath(path: string, field: string): void {
  if (path.length === 0) throw ERRORS.invalid(`${field} must not be empty`);
  if (path.includes('\0')) throw ERRORS.invalid(`${field} must not contain NUL characters`);
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes >= PATH_MAX) throw ERRORS.invalid(`${field} is ${bytes} bytes long; at most ${PATH_MAX - 1} are allowed`);
  for (const part of path.split('/')) {
    const n = Buffer.byteLength(part, 'utf8');
    if (n > NAME_MAX) throw ERRORS.invalid(`${field} has a component of ${n} bytes; at most ${NAME_MAX} are allowed per name`);
  }
}
