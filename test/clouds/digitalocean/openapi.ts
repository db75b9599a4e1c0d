/**
 * DigitalOcean's official OpenAPI document (bundled from digitalocean/openapi
 * `specification/DigitalOcean-public.v2.yaml`) as a validator of every request and response that crosses
 * the simulator, through openapi-backend (ajv underneath, formats from ajv-formats).
 *
 * The document is not part of the repository. It is read from `$DO_OPENAPI_SPEC`, else from
 * `../shared/specs/digitalocean-openapi.yaml` beside the repository. Without it the simulator still
 * answers, and the checks against the document are reported as skipped (test/helpers/openapi.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import addFormats from 'ajv-formats';
import { load } from 'js-yaml';
import { type Document, OpenAPIBackend, type Operation, SetMatchType } from 'openapi-backend';

export const SPEC_ENV = 'DO_OPENAPI_SPEC';
const BESIDE = fileURLToPath(new URL('../../../../shared/specs/digitalocean-openapi.yaml', import.meta.url));

/**
 * Where the document is, or why the checks against it are skipped. A `$DO_OPENAPI_SPEC` that names no
 * file is a mistake and throws: asking for the check must never quietly skip it.
 */
export function specLocation(): { path: string } | { missing: string } {
  const named = process.env[SPEC_ENV];
  if (named) {
    if (!existsSync(named)) throw new Error(`${SPEC_ENV}=${named}: no such file`);
    return { path: named };
  }
  if (existsSync(BESIDE)) return { path: BESIDE };
  return {
    missing: `DigitalOcean's OpenAPI document not found: set ${SPEC_ENV} to its path (see README, "Test")`,
  };
}

/** What the simulators of this test file did off the document, cleared by test/helpers/openapi.ts. */
export const specViolations: string[] = [];

export interface CheckedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body?: unknown;
}

export class SpecChecker {
  private constructor(private readonly api: OpenAPIBackend) {}

  /** Loads and prepares the document once per process (about two seconds); undefined without it. */
  static load(): Promise<SpecChecker | undefined> {
    loading ??= (async () => {
      const where = specLocation();
      if (!('path' in where)) return undefined;
      const definition = load(readFileSync(where.path, 'utf8')) as Document;
      const api = new OpenAPIBackend({
        definition,
        quick: true,
        strict: false,
        validate: true,
        customizeAjv: (ajv) => {
          // ajv-formats is CommonJS: its plugin is the default export's `default`.
          addFormats.default(ajv);
          return ajv;
        },
      });
      await api.init();
      return new SpecChecker(api);
    })();
    return loading;
  }

  /**
   * Compiles the validators of these operations now, so that the first request to each is not slowed
   * by it (a slow first answer would trip the client's timeout on a busy machine).
   */
  warm(operationIds: readonly string[]): void {
    for (const id of operationIds) {
      this.api.validator.getRequestValidatorsForOperation(id);
      this.api.validator.getStatusBasedResponseValidatorForOperation(id);
      this.api.validator.getResponseHeadersValidatorForOperation(id);
    }
  }

  /** The operation a request is for, and what is wrong with it (empty when nothing). */
  checkRequest(req: CheckedRequest): { operation?: Operation; errors: string[] } {
    const request = {
      method: req.method.toLowerCase(),
      path: req.path,
      query: req.query,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
    };
    const operation = this.api.matchOperation(request);
    if (!operation) return { errors: [`${req.method} ${req.path} is no operation of the DigitalOcean API`] };
    const where = `${operation.operationId} request`;
    const errors: string[] = [];
    if (req.body !== undefined && !/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
      errors.push(
        `${where}: body sent as ${req.headers['content-type'] ?? 'no content type'}, not application/json`,
      );
    }
    const result = this.api.validateRequest(request, operation);
    for (const e of result.errors ?? []) errors.push(`${where}: ${e.instancePath || '/'} ${e.message}`);
    return { operation, errors };
  }

  /** What is wrong with a response to this operation: undeclared status, body or headers off the schema. */
  checkResponse(
    operation: Operation,
    status: number,
    headers: Record<string, string>,
    body: unknown,
  ): string[] {
    const where = `${operation.operationId} response ${status}`;
    const declared = Object.keys(operation.responses ?? {});
    if (!declared.includes(String(status)) && !declared.includes('default')) {
      return [`${where}: status not declared (declared: ${declared.join(', ')})`];
    }
    const key = declared.includes(String(status)) ? String(status) : 'default';
    const response = (operation.responses?.[key] ?? {}) as { content?: Record<string, unknown> };
    const errors: string[] = [];
    if (response.content && body === undefined) errors.push(`${where}: body missing`);
    if (!response.content && body !== undefined) errors.push(`${where}: a body where none is declared`);
    if (response.content && body !== undefined) {
      const result = this.api.validateResponse(body, operation, status);
      for (const e of result.errors ?? []) errors.push(`${where}: ${e.instancePath || '/'} ${e.message}`);
    }
    const headerResult = this.api.validateResponseHeaders(headers, operation, {
      statusCode: status,
      setMatchType: SetMatchType.Superset,
    });
    for (const e of headerResult.errors ?? [])
      errors.push(`${where} headers: ${e.instancePath || '/'} ${e.message}`);
    return errors;
  }
}

let loading: Promise<SpecChecker | undefined> | undefined;
