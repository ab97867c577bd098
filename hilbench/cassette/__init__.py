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
- ``channels/NAME.jsonl`` (reserved for agent traffic and VISA I/O, one JSON line per message
  with an orchestrator-clock ``t``; not written yet).
"""

FORMAT_VERSION = 1
