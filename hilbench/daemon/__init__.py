"""The measurement daemon: a durable queue of campaigns, cron schedules, live status,
notifications and systemd supervision, around the same runner as ``hilbench run``.

One module per job: ``queue_db`` (every SQL statement of the queue, history, schedules and
bench heartbeats, on a store file or a PostgreSQL database shared by benches), ``db`` (the
queue's engine), ``push`` (finished runs copied to a shared store by run id), ``schedule``
(cron fire times, missed-fire policy), ``worker`` (the child process that runs one queue item
with the campaign runner), ``manager`` (the daemon's loop and state machine),
``control`` (the control socket), ``status`` (what `hilbench status` shows), ``notify``
(Apprise and a command hook), ``sdnotify`` and ``systemd`` (supervision), ``config``.
bluesky-queueserver's vocabulary is the model: queue items, a history with exit status,
manager states idle / running / paused / stopping.
"""
