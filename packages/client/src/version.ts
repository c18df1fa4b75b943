/** This SDK's version, as its `User-Agent` names it (a test holds it equal to package.json's). */
export const SDK_VERSION = '0.1.0';
