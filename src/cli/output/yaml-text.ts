// `-o yaml` imports yaml through this module when it prints: yaml is bundled (build/bundle.mjs) and
// an import() of a bundled CommonJS package would yield only its default export.
export { stringify } from 'yaml';
