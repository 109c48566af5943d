import { meetsMinimum, type Severity } from "./severity.ts"

/** What the routing rule reads of a channel. */
export interface RoutedChannel {
  readonly enabled: boolean
  readonly minSeverity: Severity
}

/**
 * The alert channels an incident of this severity reaches: the enabled ones whose minimum severity it meets (a channel
 * set to "high" gets high and critical incidents, never a medium one), in the order given. The outbox applies it to
 * each announced transition, with the severity the transition leaves the incident at, and to each close.
 */
export const channelsReached = <C extends RoutedChannel>(
  channels: ReadonlyArray<C>,
  severity: Severity,
): ReadonlyArray<C> => channels.filter((channel) => channel.enabled && meetsMinimum(severity, channel.minSeverity))
