"""Cassettes: a bench session written to a folder that an auditor or a replay can read back.

Layout (format version :data:`FORMAT_VERSION`), every file owner-only and flushed per write so a
killed recording keeps what came before its last write:

- ``manifest.json``: format version, hilbench version and commit, campaign file and its sha256,
  Python and package versions, the agents (handshake: capabilities) and instruments the run
  documents name, clock offsets per agent (rewritten whole, atomically, as they arrive);
- ``documents.jsonl``: every run document except power samples, one JSON object per line, times
  on the orchestrator's clock;
- ``samples.jsonl`` + ``samples/``: power samples as raw little-endian arrays, one set of files
  per (phase, source) stream, never JSON (see :mod:`hilbench.cassette.arrays`); a stream's
  files are named by their sha256 in ``samples.jsonl`` once the stream ends;
- ``campaign.toml``: the campaign file as run (what ``hilbench replay`` runs again);
- ``channels/``: the orchestrator's outside world, written by
  :mod:`hilbench.cassette.channels` (format below; ``protocols/cassette.md`` has it too);
- ``arrays/<sha256>``: arrays and long replies the channels refer to, raw bytes named by their
  sha256 (an array reference is ``{"sha256", "dtype", "shape"}``, dtype as numpy's ``str``).

Channels (times ``t``, ``t0``, ``t1`` in seconds on the orchestrator's clock,
:func:`hilbench.clock.real_now`). Every ``.jsonl`` channel starts with a header line
``{"kind": "channel", "channel": KIND, ...}``:

- ``agent-ID.jsonl`` (``channel: "agent"``, ``agent``, ``address``): one per agent link, every
  message as the orchestrator sent or received it, after CurveZMQ (never a key):
  ``{"t", "dir": "out"|"in", "type", "id", "cmd", "body", "arrays": [ref, ...]}`` (arrays
  received are in ``arrays/``; arrays sent are referenced by sha256 only: the orchestrator makes
  them again from the campaign); a send
  refused for want of a connection adds ``"again": true``; a receive that timed out is
  ``{"t", "dir": "in", "again": true}`` (the orchestrator waited there);
- ``visa-RESOURCE.jsonl`` (``channel: "visa"``, ``resource``, ``options``): one per opened VISA
  resource, every data call (write, query, read, read_raw, binary and ASCII values...):
  ``{"op", "args", "kwargs"?, "t0", "t1", "result"}`` or, for a call that raised,
  ``{..., "error", "message", "error_code"}``; the last line ``{"op": "close", "t0"}``.
  Values longer than 4096 characters are ``{"text_sha256"}`` / ``{"bytes_sha256"}``, bytes
  ``{"bytes": HEX}``, arrays ``{"array": ref}``;
- ``spawned.jsonl``: ``{"kind": "spawned", "name", "address"}`` per helper process started
  (agents with ``spawn = true``, the simulated meter), and ``{"kind": "reference", "link"}``
  per bound of the orchestrator's own reference echoes, in the order measured (they are taken
  on a thread the clock does not record: :mod:`hilbench.orchestrator.reference_link`);
- ``clock.f8``: every reading of :func:`hilbench.clock.now` on the orchestrator's thread while
  recording, raw little-endian float64 in order (a replay returns them in the same order: its
  virtual clock).

A second channel of the same name gets ``.2``, ``.3``... Lines are flushed as written, clock
readings at least every quarter second: a recording killed with SIGKILL keeps everything up to
its last second (a last line cut short is skipped by readers).
"""

FORMAT_VERSION = 1
