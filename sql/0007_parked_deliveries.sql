-- The waiting deliveries of a disabled channel are parked: out of the dispatcher's due index, so its claim query no
-- longer walks past them on every round (a disabled channel with a large backlog cost every claim a scan of it).
-- Enabling the channel unparks them; what was due is then sent at once, as before.
alter table webhook_deliveries add column channel_enabled boolean not null default true;
update webhook_deliveries d set channel_enabled = false
from webhook_channels c
where c.id = d.channel_id and not c.enabled and d.status in ('pending', 'failed');

drop index webhook_deliveries_due_idx;
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at, id)
  where status in ('pending', 'failed') and channel_enabled;
-- The parked ones, by channel (enabling it unparks them; the queue-depth metric counts them).
create index webhook_deliveries_parked_idx on webhook_deliveries (channel_id)
  where status in ('pending', 'failed') and not channel_enabled;
