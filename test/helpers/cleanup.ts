/** Setup file (vitest.config.ts): after each test file, remove the temp folders its hooks made. */
import { afterAll } from 'vitest';
import { removeLeftovers } from './tmp.js';

afterAll(removeLeftovers);
