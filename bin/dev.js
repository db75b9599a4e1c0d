#!/usr/bin/env node
// Runs the TypeScript sources directly (Node >= 22.18 strips types); rebuilt dist is not needed.
import { execute } from '@oclif/core';

await execute({ development: true, dir: import.meta.url });
