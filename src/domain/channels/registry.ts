import { emailKind } from "./email.ts"
import { splunkHecKind } from "./hec.ts"
import type { ChannelKindSpec } from "./kinds.ts"
import { slackKind } from "./slack.ts"
import { syslogKind } from "./syslog.ts"
import { teamsKind } from "./teams.ts"
import { webhookKind } from "./webhook.ts"

/**
 * Every channel kind, in the order the console offers them. A new kind is its descriptor module in this folder
 * and one line here (and a migration widening the database's check on `webhook_channels.kind`, kept as a safety net).
 */
export const CHANNEL_KIND_SPECS = [webhookKind, slackKind, teamsKind, syslogKind, splunkHecKind, emailKind] as const

export type ChannelKind = (typeof CHANNEL_KIND_SPECS)[number]["name"]

export const CHANNEL_KINDS = CHANNEL_KIND_SPECS.map((spec) => spec.name) as unknown as readonly [
  ChannelKind,
  ...Array<ChannelKind>,
]

const BY_NAME: ReadonlyMap<string, ChannelKindSpec<ChannelKind>> = new Map(
  CHANNEL_KIND_SPECS.map((spec) => [spec.name, spec]),
)

export const isChannelKind = (name: string): name is ChannelKind => BY_NAME.has(name)

/** A stored or given kind's descriptor; undefined for a name that is not a kind. */
export function kindSpec(kind: ChannelKind): ChannelKindSpec<ChannelKind>
export function kindSpec(kind: string): ChannelKindSpec<ChannelKind> | undefined
export function kindSpec(kind: string): ChannelKindSpec<ChannelKind> | undefined {
  return BY_NAME.get(kind)
}

/** The kinds whose descriptor passes `test`, in the registry's order. */
export const kindsWhere = (test: (spec: ChannelKindSpec<ChannelKind>) => boolean): ReadonlyArray<ChannelKind> =>
  CHANNEL_KIND_SPECS.filter(test).map((spec) => spec.name)

/** The kinds that may send OCSF (chat kinds render a message for people). */
export const OCSF_KINDS: ReadonlyArray<ChannelKind> = kindsWhere((spec) => spec.formats.includes("ocsf"))
