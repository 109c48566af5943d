import { Layer } from "effect"
import { AlertOutbox } from "./AlertOutbox.ts"
import { ApiKeysRepo } from "./ApiKeysRepo.ts"
import { AuditRepo } from "./AuditRepo.ts"
import { BaitCredentialsRepo } from "./BaitCredentialsRepo.ts"
import { ChannelsRepo } from "./ChannelsRepo.ts"
import { ConsoleListsRepo } from "./ConsoleListsRepo.ts"
import { ConsoleUsersRepo } from "./ConsoleUsersRepo.ts"
import { DeliveriesRepo } from "./DeliveriesRepo.ts"
import { EmailRecipientsRepo } from "./EmailRecipientsRepo.ts"
import { EventsRepo } from "./EventsRepo.ts"
import { IgnoreRulesRepo } from "./IgnoreRulesRepo.ts"
import { IncidentIndicatorsRepo } from "./IncidentIndicatorsRepo.ts"
import { IncidentNotesRepo } from "./IncidentNotesRepo.ts"
import { IncidentsRepo } from "./IncidentsRepo.ts"
import { NetworksRepo } from "./NetworksRepo.ts"
import { OrgsRepo } from "./OrgsRepo.ts"
import { SensorsRepo } from "./SensorsRepo.ts"
import { SignInProvidersRepo } from "./SignInProvidersRepo.ts"
import { TransitionsRepo } from "./TransitionsRepo.ts"

const TablesLive = Layer.mergeAll(
  OrgsRepo.Default,
  ApiKeysRepo.Default,
  SensorsRepo.Default,
  IncidentsRepo.Default,
  ConsoleListsRepo.Default,
  EventsRepo.Default,
  TransitionsRepo.Default,
  ChannelsRepo.Default,
  DeliveriesRepo.Default,
  EmailRecipientsRepo.Default,
  ConsoleUsersRepo.Default,
  AuditRepo.Default,
  IncidentNotesRepo.Default,
  IncidentIndicatorsRepo.Default,
  IgnoreRulesRepo.Default,
  NetworksRepo.Default,
  BaitCredentialsRepo.Default,
  SignInProvidersRepo.Default,
)

/**
 * Every shared repository, listed once, and the outbox written from them (ingestion and every close queue
 * deliveries). A repository holds no state but its statements, so each face gets all of them, built on the database
 * pool main.ts gives that face.
 */
export const ReposLive = AlertOutbox.Default.pipe(Layer.provideMerge(TablesLive))
