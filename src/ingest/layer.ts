import { Layer } from "effect"
import { ReposLive } from "../repos/layers.ts"
import { AttackerInputRepairLive } from "./AttackerInputRepair.ts"
import { CowrieSessionsRepo } from "./CowrieSessionsRepo.ts"
import { Ingestor } from "./Ingestor.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { SensorAuth } from "./SensorAuth.ts"
import { IngestServerLive } from "./server.ts"

/**
 * The ingest face: sensors report on INGEST_PORT; beside the listener runs the one-time repair of stored attacker
 * input. It needs a database pool, the configuration, the keys and the lifecycle, given by main.ts. The background
 * jobs (idle close, silent sensors, retention) are jobs/'s, composed beside it in main.ts.
 */
export const IngestLive = Layer.mergeAll(IngestServerLive, AttackerInputRepairLive).pipe(
  Layer.provide(Layer.mergeAll(Ingestor.Default, SensorAuth.Default)),
  // One cache of the organizations' keys for the Ingestor and the honeypot routes.
  Layer.provide(Layer.mergeAll(OrgKeys.Default, CowrieSessionsRepo.Default)),
  Layer.provide(ReposLive),
)
