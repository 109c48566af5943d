-- The TLP 2.0 marking of an organization's threat intelligence: the marking-definition its TAXII collection puts on
-- every STIX object, telling whoever reads the feed how far they may share it. Set by an admin (console or admin
-- CLI), audited as organization.tlp. The names are the TLP 2.0 extension's own (tlp_2_0).
alter table organizations add column tlp text not null default 'amber'
  constraint organizations_tlp_check check (tlp in ('clear', 'green', 'amber', 'amber+strict', 'red'));
