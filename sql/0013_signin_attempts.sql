-- D27 under concurrency: a sign-in attempt is written (committed) before its password is verified, then counted
-- with every other attempt of the window; this id lets the attempt remove its own row when it is throttled or
-- succeeds. Rows from before this migration have none and are only ever counted and pruned.
alter table console_signin_failures add column attempt_id text;
create index console_signin_failures_attempt_idx on console_signin_failures (attempt_id);
