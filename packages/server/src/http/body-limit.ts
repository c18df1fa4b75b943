/** `bodyBytes`, the published body size limit, for the store API and the OAuth endpoints alike. */
export const BODY_BYTES = 65536;
