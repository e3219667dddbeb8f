/**
 * The Agent Server's errors, rendered as the public server does (../shared/http-errors.ts).
 */
import { ApiError } from '../shared/api-error.ts';

export { ApiError, invalid } from '../shared/api-error.ts';
export { validationIssues, type ValidationIssue } from '../shared/validation-issues.ts';

export const notFound = (what: string, id: string) => new ApiError(404, `${what} ${id} not found`);
export const conflict = (detail: string) => new ApiError(409, detail);
export const forbidden = (detail = 'Forbidden') => new ApiError(403, detail);
export const unauthorized = (detail: string) => new ApiError(401, detail);
