/**
 * E2B's `templateID` chooses a sandcell environment: the SDKs' own default
 * templates mean the server's default environment, any other template is the
 * name of an environment built with `sandcell env build` (E2B's templates are
 * built images too; here the description file plays the Dockerfile's part).
 */
import { ENVIRONMENT_NAME_PATTERN } from '../../environments/types.js';
import { DEFAULT_TEMPLATE } from './control-schemas.js';
import { E2bError } from './errors.js';

/** Templates the SDKs create by default (the code interpreter's, the base sandbox's). */
const DEFAULT_TEMPLATES = new Set([DEFAULT_TEMPLATE, 'base', 'code-interpreter', 'code-interpreter-stateful']);

/** A default template's name, which no snapshot may take. */
export function isTemplateName(name: string): boolean {
  return DEFAULT_TEMPLATES.has(name);
}

export function environmentOfTemplate(templateId: string): { environment?: string } {
  if (DEFAULT_TEMPLATES.has(templateId)) return {};
  if (!ENVIRONMENT_NAME_PATTERN.test(templateId)) {
    throw new E2bError(
      400,
      `templateID ${JSON.stringify(templateId.slice(0, 80))} is neither a default template (${[...DEFAULT_TEMPLATES].join(', ')}) nor an environment name (lower-case letters, digits and -; see GET /v1/environments).`,
    );
  }
  return { environment: templateId };
}
