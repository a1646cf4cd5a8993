/** Failures of the model side: configuration, reachability, and the provider's own errors. */
import { SandcellError } from '../errors.js';

/** The model cannot be used as configured: a missing key, an unknown provider, conflicting options. */
export class ModelConfigurationError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('model-configuration', message, options);
  }
}

/** The model's endpoint could not be reached (connection refused, DNS, timeout), after the SDK's retries. */
export class ModelUnavailableError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('model-unavailable', message, options);
  }
}

/** The provider answered with an error (after the SDK's retries on 429 and 5xx). */
export class ModelResponseError extends SandcellError {
  /** The HTTP status, when there was one. */
  readonly status?: number;

  constructor(message: string, options?: { cause?: unknown; status?: number }) {
    super('model-error', message, options);
    this.status = options?.status;
  }
}
