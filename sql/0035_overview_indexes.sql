-- The console's overview counts an organization's events (not ignored) of a time range by source, sensor, service and
-- port, and type, and its incidents by the hour or day they began. At 1M events, EXPLAIN showed the "top" counts
-- walking every event of the organization in events_org_source_ip_idx and friends (each is ordered by its column
-- first, so a time range cannot bound the walk), and the incidents' count a sequential scan.
--
-- One index by time that carries the columns the counts group by: each count is an index-only scan of the range's
-- entries alone (one more index entry per stored event, about 140 bytes).
create index events_org_overview_idx on events (org_id, time)
  include (source_ip, sensor_id, service, port, type) where ignore_rule_id is null;

-- New incidents per hour or day: an organization's incidents by their first event.
create index incidents_org_first_seen_idx on incidents (org_id, first_seen_at);

-- Commands run: the few events that carry a command (about 2 % of the bench's 1M), by time, so the count reads only
-- them. Usernames need no index of their own: most events carry one, and the range's walk above is as good.
create index events_org_command_idx on events (org_id, time)
  where ignore_rule_id is null and attacker_input ? 'command';
