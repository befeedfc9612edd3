/** The store's error type: a backend call that the store could not complete. */
import { ApiError } from '../util/index.js';

export class StoreApiError extends ApiError {
  override name = 'StoreApiError';
}
