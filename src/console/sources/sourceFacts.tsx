import type { Incident } from "../../domain/models.ts"
import { Attacker } from "../components.tsx"

/**
 * What enrichment knows of the source address, each only when known. The reverse DNS name and the AS organization
 * are written by whoever holds the address: attacker text, boxed as such.
 */
export const SourceFacts = ({ source }: { source: Incident["source"] }) => (
  <>
    {source.reverseDns !== null && (
      <>
        <dt>Reverse DNS</dt>
        <dd>
          <Attacker value={source.reverseDns} cut={253} />{" "}
          <span class="muted small">(forward-confirmed; written by the address's owner)</span>
        </dd>
      </>
    )}
    {(source.asn !== null || source.asOrganization !== null) && (
      <>
        <dt>Autonomous system</dt>
        <dd>
          {source.asn !== null && <span class="mono">AS{source.asn}</span>}
          {source.asn !== null && source.asOrganization !== null && " "}
          {source.asOrganization !== null && <Attacker value={source.asOrganization} />}
        </dd>
      </>
    )}
    {source.country !== null && (
      <>
        <dt>Country</dt>
        <dd class="mono">{source.country}</dd>
      </>
    )}
  </>
)

/** The page's lead when the source is one of the organization's own machines. */
export const InsideBanner = ({ network, ip }: { network: { cidr: string; label: string }; ip: string }) => (
  <div class="banner banner-inside" role="note" id="banner-inside">
    <p class="banner-title">
      From inside your network ({network.label}, <span class="mono">{network.cidr}</span>)
    </p>
    <p>
      <span class="mono">{ip}</span> is one of your own machines, already past your perimeter: find out what runs on it
      and who uses it.
    </p>
  </div>
)
