#!/bin/sh
# Record the repository's cassettes again from their campaigns (tests/cassettes/campaigns/NAME.toml)
# on this machine's simulated bench, then replay each: ./rerecord.sh [NAME ...] (default: all).
# It runs the replay test with --record-mode rewrite (tests/cassette_recording.py), so a cassette
# is replaced only by a recording that replays to its own figures. The Xylo and Loihi campaigns
# start their agents with ../../.venv-xylo and ../../.venv-loihi (see .ci/run for how those are
# built). Keep the campaigns tiny: the cassettes are committed and every test run replays them.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
select=""
for name in "$@"; do
    select="${select:+$select or }[$name]"
done
cd "$root"
exec "$python" -m pytest -q -p no:cacheprovider --record-mode rewrite \
    "tests/cassette/test_analysis_only.py::test_each_repository_cassette_replays_to_its_recorded_figures" \
    ${select:+-k "$select"}
