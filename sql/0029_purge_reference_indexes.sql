-- Deleting a row makes PostgreSQL look, in every table with a foreign key to it, for rows that still reference it.
-- Without an index that starts with the referencing column, each look reads that whole table: the retention purge
-- deleting the incidents of a year out of 10 M events spent about 30 s per batch of 200 incidents reading `events`,
-- passed the query time-out and never finished. These are the indexes those looks use (only rows that reference
-- something are indexed).
create index events_incident_ref_idx on events (incident_id) where incident_id is not null;
create index webhook_deliveries_incident_idx on webhook_deliveries (incident_id) where incident_id is not null;
create index webhook_deliveries_transition_idx on webhook_deliveries (transition_id) where transition_id is not null;
