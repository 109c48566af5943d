import { spawnSync } from "node:child_process"

/**
 * MMDB files for the tests, written by MaxMind's own writer (Debian's libmaxmind-db-writer-perl,
 * MaxMind::DB::Writer::Tree), so the service's reader is tested against files made the way real ones are.
 */

/** The MMDB data type of each key the tests write (the writer needs one for every key, nested ones included). */
const TYPES: Record<string, string> = {
  autonomous_system_number: "uint32",
  autonomous_system_organization: "utf8_string",
  country: "map",
  registered_country: "map",
  iso_code: "utf8_string",
  names: "map",
  en: "utf8_string",
  geoname_id: "uint32",
  asn: "utf8_string",
  as_name: "utf8_string",
  as_domain: "utf8_string",
  country_code: "utf8_string",
}

const WRITER = `
use strict; use warnings;
use JSON::PP; use MaxMind::DB::Writer::Tree;
local $/; my $in = decode_json(<STDIN>);
my $types = $in->{types};
my $tree = MaxMind::DB::Writer::Tree->new(
  ip_version => 6, record_size => 28, database_type => $in->{databaseType},
  languages => ['en'], description => { en => 'Test data written by the test suite' },
  alias_ipv6_to_ipv4 => 1, remove_reserved_networks => 0,
  map_key_type_callback => sub { $types->{$_[0]} // die "no type for key $_[0]" },
);
for my $n (@{$in->{networks}}) { $tree->insert_network($n->{network}, $n->{data}); }
open my $fh, '>:raw', $in->{path} or die "cannot write $in->{path}: $!";
$tree->write_tree($fh); close $fh;
`

export interface MmdbNetwork {
  /** A CIDR: `203.0.113.0/24`, `2001:db8::/32`. */
  readonly network: string
  readonly data: Record<string, unknown>
}

/** Writes an MMDB file at `path` holding `networks`. */
export const writeMmdb = (path: string, databaseType: string, networks: ReadonlyArray<MmdbNetwork>): void => {
  const run = spawnSync("perl", ["-e", WRITER], {
    input: JSON.stringify({ path, databaseType, networks, types: TYPES }),
    encoding: "utf8",
  })
  if (run.status !== 0) {
    throw new Error(
      `the MMDB writer failed (${run.status}); it needs Debian's libmaxmind-db-writer-perl: ${run.stderr}`,
    )
  }
}
