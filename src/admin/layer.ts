import { Layer } from "effect"
import { Accounts } from "./Accounts.ts"
import { AdminActions } from "./AdminActions.ts"
import { AdminOperations } from "./operations.ts"
import { WebhookAdmin } from "./webhookOperations.ts"

/**
 * The admin services, the one place where who may do what, how a secret is shown once and what is audited live.
 * The CLI (admin/cli.ts) and the console's settings pages are two faces of them. They need the shared repositories,
 * the webhook sender (for "send test") and the configuration.
 */
export const AdminServicesLive = Layer.mergeAll(AdminActions.Default, Accounts.Default).pipe(
  Layer.provideMerge(WebhookAdmin.Default),
  Layer.provideMerge(AdminOperations.Default),
)
