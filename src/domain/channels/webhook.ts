import { generateSigningSecret, signatureHeader, standardSignatureHeader } from "../webhookSignature.ts"
import type { ChannelKindSpec } from "./kinds.ts"
import { payloadOf } from "./ocsf.ts"

/**
 * The `webhook` kind, the spec's signed webhook: an HTTPS POST of the stored body (or, in the OCSF
 * format, its Detection Finding), signed at send time over the exact bytes sent with the channel's secret, which the
 * service makes and shows once. Each request carries the signature twice: ours (`X-Service-Signature`) and the
 * Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), both keyed with the same secret.
 */
export const webhookKind: ChannelKindSpec<"webhook"> = {
  name: "webhook",
  label: "Webhook",
  shortLabel: "webhook",
  formats: ["native", "ocsf"],
  // The native body is sent as it is stored; OCSF is rendered from it and signed like the native shape.
  sendsStored: "native",
  render: (format, message, stored, context) => JSON.stringify(payloadOf(format, message, stored, context)),
  transport: "https",
  settle: { readers: "machines" },
  credential: {
    type: "signingSecret",
    generate: generateSigningSecret,
    headers: ({ secrets, at, body, deliveryId, attempt }) => {
      const t = Math.floor(at.getTime() / 1000)
      return {
        "X-Service-Signature": signatureHeader(secrets, t, body),
        "X-Service-Webhook-Id": deliveryId,
        "X-Service-Delivery-Attempt": String(attempt),
        // The same signature by the Standard Webhooks scheme, for receivers that verify with its libraries: the
        // delivery's id (the same on every retry and redelivery), the same seconds as `t=`, the same secrets.
        "webhook-id": deliveryId,
        "webhook-timestamp": String(t),
        "webhook-signature": standardSignatureHeader(secrets, deliveryId, t, body),
      }
    },
  },
  address: {
    scheme: "https",
    noun: "URL",
    shownWhole: "admins",
    hint: ["Webhook: your receiver's ", { code: "https://" }, " URL; its signing secret is shown once."],
  },
  added: (id) => `Channel ${id} added.`,
}
