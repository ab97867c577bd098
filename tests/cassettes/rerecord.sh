#!/bin/sh
# Re-record the repository's cassettes from their campaigns (tests/cassettes/campaigns/NAME.toml)
# on this machine's simulated bench: ./rerecord.sh [NAME ...] (default: every campaign).
# HILBENCH (default: the repository's .venv/bin/hilbench) runs each campaign with --record into
# a fresh folder, which then replaces tests/cassettes/NAME. Keep the campaigns tiny: the
# cassettes are committed and every test run replays them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
hilbench=${HILBENCH:-$here/../../.venv/bin/hilbench}
if [ $# -eq 0 ]; then
    set -- $(cd "$here/campaigns" && ls *.toml | sed 's/\.toml$//')
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for name in "$@"; do
    echo "recording $name" >&2
    "$hilbench" run "$here/campaigns/$name.toml" --db "$work/$name.sqlite" --record "$work/$name"
    "$hilbench" replay "$work/$name" --analysis-only
    rm -rf "$here/$name"
    mv "$work/$name" "$here/$name"
done
