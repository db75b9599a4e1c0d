#!/usr/bin/env -S node --import tsx --disable-warning=ExperimentalWarning
// Runs the TypeScript sources in src/ through tsx, without building dist/. The oclif mapping from
// dist to src reads tsconfig through the TypeScript JS API, which TypeScript 7 no longer ships.
import { readFileSync } from 'node:fs';
import { execute } from '@oclif/core';

const root = new URL('..', import.meta.url);
const pjson = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
pjson.oclif.commands = './src/commands';
await execute({ development: true, loadOptions: { root: root.pathname, pjson } });
