-- D27: a browser that signed in to an account (or set its password) holds a signed known-device cookie. Its sign-in
-- attempts are counted per device as well as per email and address, so a lock that others make on the email never
-- keeps it out. Rows from before this migration have no device.
alter table console_signin_failures add column device text;
create index console_signin_failures_device_idx on console_signin_failures (device, at) where device is not null;
