-- D27: the known-device cookie's signature covers the user's device generation. `user reset`, `user disable` and
-- every password set bump it, so every earlier known-device cookie of the user stops counting as known at once.
alter table console_users add column device_generation integer not null default 0;
