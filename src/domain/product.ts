/** How the service names itself to receivers (OCSF `metadata.product`, syslog APP-NAME, HEC `source`). */
export const PRODUCT = {
  name: "Decoy Incident Service",
  vendor: "Decoy Incident Service",
  /** The package's version; a test keeps it equal to package.json's. */
  version: "0.1.0",
  /** A token form of the name (syslog APP-NAME, HEC source, User-Agent). */
  id: "decoy-incident-service",
} as const
