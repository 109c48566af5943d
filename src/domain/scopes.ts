import { Schema } from "effect"

/** What an API key may read: each scope opens one resource's endpoints (and its change feed). */
export const SCOPES = ["incidents:read", "events:read"] as const
export const Scope = Schema.Literal(...SCOPES)
export type Scope = typeof Scope.Type
