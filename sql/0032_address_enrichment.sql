-- Enrichment of source addresses: what the enrichment job (src/jobs/enrichment/) learnt of an address, off the
-- ingest path. Public data of the address, shared by every organization: an organization only ever reads it joined
-- to its own incidents (by their source_ip). Ingestion never reads or writes it.
--
-- Two halves with their own freshness:
-- - reverse DNS: the PTR name, kept only when forward-confirmed (its A/AAAA records include the address), sanitised
--   and at most 253 characters; `rdns_status` says why it is null (never looked up because REVERSE_DNS is off, no
--   PTR record, a name whose forward records do not include the address, a malformed or oversized name, or a lookup
--   that failed or timed out). It is looked up again after `rdns_expires_at` (a positive and a negative time-to-live).
-- - ASN, AS organization and country: from the MMDB files the operator configured, as of `geo_source` (the files'
--   build times): when the files change, the addresses are looked up in them again.
-- `lease_until`: a process looking the address up right now holds it until then, so replicas do not send the same
-- PTR query twice.
create table address_enrichment (
  address          text primary key,
  reverse_dns      text check (reverse_dns is null or char_length(reverse_dns) between 1 and 253),
  rdns_status      text not null default 'pending'
                   check (rdns_status in ('pending', 'off', 'ok', 'none', 'unconfirmed', 'invalid', 'failed')),
  rdns_looked_up_at timestamptz,
  rdns_expires_at  timestamptz not null default '-infinity',
  asn              bigint check (asn is null or asn between 0 and 4294967295),
  as_organization  text check (as_organization is null or char_length(as_organization) between 1 and 256),
  country          text check (country is null or country ~ '^[A-Z]{2}$'),
  geo_source       text,
  geo_looked_up_at timestamptz,
  lease_until      timestamptz
);
