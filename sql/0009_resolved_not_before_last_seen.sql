-- resolvedAt is never earlier than lastSeenAt. Before, events up to a day ahead of the server's clock
-- were accepted, so an incident closed before its last event's time could have resolved_at < last_seen_at. Such rows
-- are set to resolve at their lastSeenAt (the earliest moment consistent with that rule); nothing else changes.
update incidents set resolved_at = last_seen_at
where status = 'closed' and resolved_at is not null and resolved_at < last_seen_at;
