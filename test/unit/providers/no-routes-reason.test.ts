/**
 * Why a cloud has no routes is said in every `ccm run` start log (the route controller's line) and
 * in `ccm doctor`'s routes check: in an operator's words, without the API document's schema names or
 * the SDK's source files that back it (those stay in the code and docs/routes.md).
 */
import { expect, it } from 'vitest';
import { createBrightbox } from '../../../src/providers/brightbox/index.js';
import { createDigitalOcean } from '../../../src/providers/digitalocean/index.js';

it.each([
  ['digitalocean', createDigitalOcean({ token: 'x', baseUrl: 'https://api.example.com' })],
  ['brightbox', createBrightbox({ apiUrl: 'https://api.example.com', clientId: 'cli-x', clientSecret: 'x' })],
])('%s: the reason it has no routes names no schema or source file', (_name, provider) => {
  const reason = provider.noRoutesReason ?? '';
  expect(reason).toMatch(/^\S+ API has no routes: /);
  expect(reason).not.toMatch(/OpenAPI|components\.schemas|\.go\b|\/v2\/|\{/);
});
