-- A third API key scope, intel:read: the threat intelligence the decoys produce (the firewall blocklist), for a key
-- that reads no incident and no event.
alter table api_keys drop constraint api_keys_scopes_check;
alter table api_keys add constraint api_keys_scopes_check
  check (scopes <@ array['incidents:read', 'events:read', 'intel:read']::text[] and cardinality(scopes) > 0);
