import { Layer } from "effect"
import { CowrieSessionsRepo } from "../ingest/CowrieSessionsRepo.ts"
import { ReposLive } from "../repos/layers.ts"
import { EnrichmentLive } from "./enrichment/layer.ts"
import { IdleCloserLive } from "./idleClose.ts"
import { RetentionLive } from "./retention.ts"
import { SensorHealthSweepLive } from "./sensorHealth.ts"

/**
 * The background jobs, each a scoped fiber: the idle close (with the forgetting of old Cowrie sessions), the
 * silent-sensor sweep, the retention purge and the address enrichment. They serve no request; they need a database
 * pool (the ingest side's, given by main.ts), the configuration and the lifecycle.
 */
export const JobsLive = Layer.mergeAll(IdleCloserLive, SensorHealthSweepLive, RetentionLive, EnrichmentLive).pipe(
  Layer.provide(CowrieSessionsRepo.Default),
  Layer.provide(ReposLive),
)
