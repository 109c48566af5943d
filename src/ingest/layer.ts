import { Layer } from "effect"
import { ReposLive } from "../repos/layers.ts"
import { AttackerInputRepairLive } from "./AttackerInputRepair.ts"
import { CowrieSessionsRepo } from "./CowrieSessionsRepo.ts"
import { IdleCloserLive } from "./IdleCloser.ts"
import { Ingestor } from "./Ingestor.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { RetentionLive } from "./Retention.ts"
import { SensorAuth } from "./SensorAuth.ts"
import { SensorHealthSweepLive } from "./SensorHealthSweep.ts"
import { IngestServerLive } from "./server.ts"

/**
 * The ingest face: sensors report on INGEST_PORT; beside the listener run the idle-close fiber, the silent-sensor
 * sweep, the one-time repair of stored attacker input and the retention purge (D49). It needs a database pool, the configuration, the keys and
 * the lifecycle, given by main.ts.
 */
export const IngestLive = Layer.mergeAll(
  IngestServerLive,
  IdleCloserLive,
  SensorHealthSweepLive,
  AttackerInputRepairLive,
  RetentionLive,
).pipe(
  Layer.provide(Layer.mergeAll(Ingestor.Default, SensorAuth.Default)),
  // One cache of the organizations' keys for the Ingestor and the honeypot routes.
  Layer.provide(Layer.mergeAll(OrgKeys.Default, CowrieSessionsRepo.Default)),
  Layer.provide(ReposLive),
)
