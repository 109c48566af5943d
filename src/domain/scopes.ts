import { Schema } from "effect"

/**
 * What an API key may read: each scope opens one resource's endpoints (and its change feed). `intel:read` opens the
 * threat intelligence the decoys produce (the firewall blocklist), and nothing of the incidents or events themselves:
 * a key pasted into a firewall's configuration reads addresses only. `audit:read` opens the audit trail (who changed
 * what in the console or with the admin CLI, and every sign-in), and nothing else.
 */
export const SCOPES = ["incidents:read", "events:read", "intel:read", "audit:read"] as const
export const Scope = Schema.Literal(...SCOPES)
export type Scope = typeof Scope.Type
