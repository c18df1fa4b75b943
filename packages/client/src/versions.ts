/**
 * The date versions of the interface, as the contract this SDK is built with knows them. The SDK's
 * types are those of `CURRENT_API_VERSION`: pin it in `apiVersion` when you upgrade the SDK.
 */
export { type ApiVersionEntry, apiVersions, CURRENT_API_VERSION } from '@svc/contract';

/** The request header that names the date version to call under, and the response header that names the one that served. */
export const API_VERSION_HEADER = 'API-Version';
