import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { NO_GEO } from "../../domain/enrichment.ts"
import { AppConfig } from "../../platform/config.ts"
import { AddressEnrichmentRepo, type ClaimedAddress, type EnrichmentWrite } from "../../repos/AddressEnrichmentRepo.ts"
import { systemDnsServers } from "./dns.ts"
import { GeoFiles } from "./mmdb.ts"
import { lookUpReverseDns, REVERSE_DNS_TTL_SECONDS } from "./reverseDns.ts"

/** How often the job looks for addresses to enrich (new incidents show their enrichment within about this). */
export const ENRICHMENT_POLL = Duration.seconds(2)
/** Lookups in flight per process: an attack from many addresses waits its turn instead of flooding a resolver. */
export const ENRICHMENT_CONCURRENCY = 4
/** Addresses taken per pass. */
const BATCH = 64
/** A pass looks at incidents seen this recently; every SWEEP_EVERY-th pass looks back a day (late-reported events). */
const RECENT_SECONDS = 10 * 60
const SWEEP_SECONDS = 24 * 3600
const SWEEP_EVERY = 300
/** How long a claimed address is this process's: well past one lookup's time-out. */
const LEASE_SECONDS = 60

/**
 * The enrichment job: a background fiber, beside the ingest side's, that gives incidents' source addresses their
 * reverse DNS name (REVERSE_DNS=on) and their AS and country (MMDB files), stored in address_enrichment. Ingestion
 * never waits for it and never reads it; a read (API, console, MCP) or a message written later shows what it found.
 *
 * Every ENRICHMENT_POLL it takes the newest incidents' addresses with no fresh row (AddressEnrichmentRepo.candidates),
 * holds them under a lease so replicas do not ask twice, looks them up ENRICHMENT_CONCURRENCY at a time, each reverse
 * lookup within REVERSE_DNS_TIMEOUT, and writes the outcome with its time-to-live. A failed pass is logged and the
 * next one runs. With neither reverse DNS nor an MMDB file configured there is nothing to do and no fiber runs.
 */
export const EnrichmentJobLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { enrichment } = yield* AppConfig
    const geo = new GeoFiles(
      Option.getOrUndefined(enrichment.mmdbAsnFile),
      Option.getOrUndefined(enrichment.mmdbCountryFile),
    )
    const rdnsOn = enrichment.reverseDns
    if (!rdnsOn && !geo.configured) return
    const repo = yield* AddressEnrichmentRepo
    const servers = enrichment.dnsServers.length > 0 ? enrichment.dnsServers : systemDnsServers()
    if (rdnsOn && servers.length === 0) {
      yield* Effect.logWarning(
        "REVERSE_DNS is on but no DNS server is known (DNS_SERVERS is unset and /etc/resolv.conf names none): every reverse lookup fails",
      )
    }

    const enrichOne = (row: ClaimedAddress, geoSource: string | null) =>
      Effect.gen(function* () {
        // The MMDB facts first: a local read, written at once, so a slow DNS server never holds them back.
        const geoWrite = row.geoDue
          ? { facts: geo.configured ? geo.lookUp(row.address) : NO_GEO, source: geoSource }
          : undefined
        const rdnsWanted = row.rdnsDue && rdnsOn
        if (geoWrite !== undefined && rdnsWanted) {
          yield* repo.write({ address: row.address, geo: geoWrite, keepLease: true })
        }
        let rdns: EnrichmentWrite["rdns"]
        if (rdnsWanted) {
          const outcome = yield* lookUpReverseDns(servers, row.address, enrichment.reverseDnsTimeout)
          rdns = { status: outcome.status, name: outcome.name, ttlSeconds: REVERSE_DNS_TTL_SECONDS[outcome.status] }
        } else if (!rdnsOn && row.rdnsStatus === "pending") {
          // Says why the name is null; looked up once REVERSE_DNS is turned on.
          rdns = { status: "off", name: null, ttlSeconds: 0 }
        }
        yield* repo.write({
          address: row.address,
          ...(rdns === undefined ? {} : { rdns }),
          ...(geoWrite === undefined || rdnsWanted ? {} : { geo: geoWrite }),
        })
      }).pipe(
        Effect.onInterrupt(() => Effect.ignore(repo.release(row.address))),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("address enrichment failed", cause).pipe(Effect.annotateLogs({ address: row.address })),
        ),
      )

    /** Opens MMDB files that are new or changed on disk; a file that cannot be read is logged once per change. */
    const refreshGeo = Effect.suspend(() =>
      Effect.forEach(
        geo.refresh(),
        ({ path, problem }) =>
          Effect.logError("an MMDB file cannot be read: its facts are left out until it is replaced").pipe(
            Effect.annotateLogs({ path, problem }),
          ),
        { discard: true },
      ),
    )

    let passes = 0
    const pass = Effect.gen(function* () {
      yield* refreshGeo
      const geoSource = geo.source
      const lookback = passes++ % SWEEP_EVERY === 0 ? SWEEP_SECONDS : RECENT_SECONDS
      const addresses = yield* repo.candidates(rdnsOn, geoSource, lookback, BATCH)
      const claimed = yield* repo.claim(addresses, rdnsOn, geoSource, LEASE_SECONDS)
      yield* Effect.forEach(claimed, (row) => enrichOne(row, geoSource), {
        concurrency: ENRICHMENT_CONCURRENCY,
        discard: true,
      })
    })

    yield* refreshGeo
    yield* Effect.logInfo("address enrichment").pipe(
      Effect.annotateLogs({
        reverseDns: rdnsOn ? `on, ${servers.length} server(s)` : "off",
        mmdb: geo.source ?? "none",
      }),
    )
    yield* Effect.forkScoped(
      pass.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("address enrichment pass failed", cause)),
        Effect.repeat(Schedule.spaced(ENRICHMENT_POLL)),
      ),
    )
  }),
)

/** The job with its repository, on the pool main.ts gives it (the ingest side's). */
export const EnrichmentLive = EnrichmentJobLive.pipe(Layer.provide(AddressEnrichmentRepo.Default))
