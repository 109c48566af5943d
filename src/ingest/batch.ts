import type { EventId, IncidentId, OrgId, SensorId } from "../domain/ids.ts"
import type { CowrieLink } from "./formats/native.ts"
import type { ValidEvent } from "./validate.ts"

/**
 * What a batch of events is on its way through ingestion: who sent it (the sensor a request authenticated as), the
 * events to store, and the outcome of each. The routes (server.ts, hec.ts), the shared steps (pipeline.ts), the
 * sensor's authentication (SensorAuth.ts) and the Ingestor all speak these; none of them needs another's code for it.
 */

/** The sensor a request authenticated as: the sensor, and so the organization, never come from the body. */
export interface SensorIdentity {
  readonly sensorId: SensorId
  readonly orgId: OrgId
  readonly name: string
  readonly profile: string
}

export type EventOutcome =
  | {
      readonly index: number
      readonly status: "accepted"
      readonly id: EventId
      /** Null: an ignore rule matched the event; it is stored, so it can be looked at, and joins no incident. */
      readonly incidentId: IncidentId | null
    }
  | { readonly index: number; readonly status: "duplicate"; readonly id: EventId | null }
  | { readonly index: number; readonly status: "rejected"; readonly reason: string }

/**
 * A validated event to store, with its Cowrie session when it came from a Cowrie line: a session's lines complete
 * one another (its connect gives the protocol and ports of the lines that lack them).
 */
export interface EventItem {
  readonly index: number
  readonly event: ValidEvent
  readonly cowrie?: CowrieLink | undefined
}
