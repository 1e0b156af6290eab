// The base image every box starts from (a Debian root built by native/mkimage.sh with mmdebstrap: about 100 s
// and as much CPU, once per machine), built by scripts/setup.sh with the rest of the machine's set-up rather
// than by the first server's start or in the middle of a test run. Where the server looks for it:
// DEVBOXD_IMAGE_DIR, else <DEVBOXD_DATA_DIR>/images, else data/images (the tests' image dir too).
import path from 'node:path';
import { BaseImage } from '../src/runtime/linux/image.js';

const dir = path.resolve(process.env.DEVBOXD_IMAGE_DIR || path.join(process.env.DEVBOXD_DATA_DIR || 'data', 'images'));
const say = (obj: object | string, msg?: string) => process.stdout.write(`setup: ${msg ?? obj}\n`);
const image = new BaseImage(dir, { info: say, warn: say, error: say });
await image.ensure();
