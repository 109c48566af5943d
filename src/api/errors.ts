import { Data } from "effect"

/**
 * No incident with this id in the caller's organization (or the id is not an incident id). It carries only the id
 * the caller asked for.
 */
export class IncidentNotFound extends Data.TaggedError("IncidentNotFound")<{ readonly id: string }> {}
/** No event with this id in the caller's organization (or the id is not an event id). */
export class EventNotFound extends Data.TaggedError("EventNotFound")<{ readonly id: string }> {}
/** The caller's organization has seen nothing from this address (no incident, no event). */
export class SourceNotFound extends Data.TaggedError("SourceNotFound")<{ readonly ip: string }> {}
export type LookupError = IncidentNotFound | EventNotFound
/** A feed token from before changes the retention purge has deleted (410 token_expired). */
export class TokenExpired extends Data.TaggedError("TokenExpired")<{ readonly feed: string }> {}
