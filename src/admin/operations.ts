/** Deprecated path of the old admin services (see legacy.ts); new code imports the per-resource services. */
export { AdminOperations } from "./legacy.ts"
export type { SensorView } from "./SensorAdmin.ts"
