/**
 * The control plane's errors, rendered as the public API does (../shared/http-errors.ts).
 */
import { ApiError } from '../shared/api-error.ts';

export { ApiError, invalid } from '../shared/api-error.ts';
export { quotaExceeded } from '../shared/quota-error.ts';
export type { ValidationIssue } from '../shared/validation-issues.ts';

export const badRequest = (detail: string) => new ApiError(400, detail);
export const conflict = (detail: string) => new ApiError(409, detail);
export const deploymentNotFound = (id: string) => new ApiError(404, `Deployment ID ${id} not found.`);
export const revisionNotFound = (id: string) => new ApiError(404, `Revision ID ${id} not found.`);

/** The store could not answer (Redis down or too slow): 503, the client may retry. */
export class StoreUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailable';
  }
}
