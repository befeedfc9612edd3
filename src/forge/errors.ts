/** The forge's error type: an API call (or push) that the forge could not complete. */
import { ApiError } from '../util/errors.js';

export class ForgeApiError extends ApiError {
  override name = 'ForgeApiError';
}
