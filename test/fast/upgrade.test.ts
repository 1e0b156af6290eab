import { suiteOn } from './upgrade.js';

suiteOn('sqlite');
