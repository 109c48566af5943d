import { emailContent } from "./emailText.ts"
import type { ChannelKindSpec } from "./kinds.ts"

/**
 * An `email` channel mails its confirmed recipients through the operator's SMTP server (SMTP_URL). It has no address
 * and no credential of its own: `url` is `mailto:` and its people are in `email_recipients`, each of whom confirmed by
 * a link before getting anything. Read by people, so it settles like Slack and Teams. The rendered text is the JSON of
 * one `EmailContent` (subject, plain text and HTML from the same facts: emailText.ts), which the SMTP transport sends
 * as multipart/alternative.
 */
export const EMAIL_CHANNEL_URL = "mailto:"

/** The most recipients one email channel has: a team's on-call list, not a mailing list. */
export const MAX_EMAIL_RECIPIENTS = 20

/** How long a confirmation link stays valid. */
export const EMAIL_CONFIRMATION_VALID_MS = 7 * 24 * 60 * 60 * 1000

export const emailKind: ChannelKindSpec<"email"> = {
  name: "email",
  label: "Email",
  shortLabel: "email",
  formats: ["native"],
  formatLabel: "Email (plain text and HTML)",
  render: (_format, message, _stored, context) =>
    JSON.stringify(
      emailContent(
        message,
        context,
        context.channel === undefined
          ? undefined
          : { channelId: context.channel.id, organization: context.channel.organization },
      ),
    ),
  transport: "smtp",
  settle: { readers: "people", defaultSeconds: 30 },
  credential: { type: "none" },
  address: {
    scheme: "mailto",
    noun: "recipients",
    shownWhole: "everyone",
    hint: [
      "Email: no URL; its recipients (below) each confirm by a link mailed to them before they get alerts, sent through the server's SMTP_URL.",
    ],
  },
  added: (id) =>
    `Email channel ${id} added. Each recipient was mailed a confirmation link and gets alerts once they have confirmed.`,
}
