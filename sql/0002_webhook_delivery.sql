-- Webhook delivery states (D17): pending (never tried), failed (tried, a retry is scheduled), succeeded, dead
-- (retries exhausted, 410 Gone, or a failed test send; an admin can re-drive it).
-- retry_index counts the failures since the delivery was queued or re-driven: it picks the next back-off step.
alter table webhook_deliveries add column retry_index integer not null default 0;

-- The dispatcher claims due deliveries of both waiting states in next_attempt_at order.
drop index webhook_deliveries_due_idx;
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at, id) where status in ('pending', 'failed');

-- The delivery log filtered by state (admin `webhook deliveries <id> --status failed|dead`).
create index webhook_deliveries_channel_status_idx on webhook_deliveries (channel_id, status, created_at desc, id desc);

-- Leases left by a stopped process are found by owner.
create index webhook_deliveries_lease_idx on webhook_deliveries (lease_owner) where lease_owner is not null;
