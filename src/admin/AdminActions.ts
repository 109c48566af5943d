/** Deprecated path of the old admin services (see legacy.ts); new code imports the per-resource services. */
export { AdminActions } from "./legacy.ts"
