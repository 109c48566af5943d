/** Deprecated path of the old admin services (see legacy.ts); new code imports ChannelAdmin. */
export { WebhookAdmin } from "./legacy.ts"
