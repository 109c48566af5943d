import { BunRuntime } from "@effect/platform-bun"
import { Effect, Layer } from "effect"
import { ApiServerLive } from "./api/server.ts"
import { SensorAuth } from "./auth/SensorAuth.ts"
import { AppConfigLive } from "./config.ts"
import { DatabaseLive } from "./db/client.ts"
import { migrate } from "./db/migrate.ts"
import { IdleCloserLive } from "./ingest/IdleCloser.ts"
import { Ingestor } from "./ingest/Ingestor.ts"
import { IngestServerLive } from "./ingest/server.ts"
import { LoggingLive } from "./logging.ts"
import { EventsRepo } from "./repos/EventsRepo.ts"
import { IncidentsRepo } from "./repos/IncidentsRepo.ts"
import { OrgsRepo } from "./repos/OrgsRepo.ts"
import { SensorsRepo } from "./repos/SensorsRepo.ts"
import { TransitionsRepo } from "./repos/TransitionsRepo.ts"

/** Applies pending migrations before anything serves (they run once, under an advisory lock). */
const MigrationsLive = Layer.effectDiscard(
  migrate.pipe(
    Effect.tap((applied) => (applied.length > 0 ? Effect.logInfo("migrations applied", applied) : Effect.void)),
  ),
)

/** Sensors report here (INGEST_PORT); the idle-close fiber runs beside it. */
const IngestionLive = Layer.mergeAll(IngestServerLive, IdleCloserLive).pipe(
  Layer.provide(Layer.mergeAll(Ingestor.Default, SensorAuth.Default)),
  Layer.provide(
    Layer.mergeAll(
      OrgsRepo.Default,
      IncidentsRepo.Default,
      EventsRepo.Default,
      TransitionsRepo.Default,
      SensorsRepo.Default,
    ),
  ),
)

/** The only place the service's layers are composed. */
export const MainLive = Layer.mergeAll(ApiServerLive, IngestionLive).pipe(
  Layer.provide(MigrationsLive),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  Layer.launch(MainLive).pipe(Effect.provide(LoggingLive), BunRuntime.runMain({ disablePrettyLogger: true }))
}
