import { suiteOn } from '../fast/upgrade.js';

suiteOn('postgres');
