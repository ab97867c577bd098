#!/usr/bin/env bash
# The side environments some tests (and the Xylo and Loihi drivers) run in, beside .venv:
#   .venv-xylo   Rockpool 2.8 + xylosim + Jax (numpy < 2): the simulated Xylo, pytest on
#                tests/drivers/xylo/xylo_env, the vectors' check under numpy 1.x
#   .venv-loihi  Python 3.10 + lava-nc 0.8.0 + lava-optimization 0.3.0 (the paper's Lava pair)
# Usage: bash scripts/setup-side-envs.sh [xylo] [loihi]   (no argument: both). Run from anywhere;
# the environments are made in the repository root. Without them those tests skip, saying to run
# this; under CI=true they fail. Needs network access to PyPI (or the configured index).
set -euo pipefail
cd "$(dirname "$0")/.."
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(xylo loihi)

setup_xylo() {
    # Rockpool 2.8 + xylosim need numpy < 2, so they get their own environment; the tests start
    # the xylo agent and run pytest on tests/drivers/xylo/xylo_env with its interpreter.
    python3 -m venv .venv-xylo
    .venv-xylo/bin/pip install --quiet --upgrade pip
    # nir: the packaged NIR graph on XyloSim (tests/drivers/xylo/xylo_env)
    .venv-xylo/bin/pip install --quiet -e '.[xylo,nir]' 'pytest>=8' 'pytest-timeout>=2.3'
    echo ".venv-xylo: $(.venv-xylo/bin/python -c 'import numpy, rockpool; print("numpy", numpy.__version__, "rockpool", rockpool.__version__)')"
}

setup_loihi() {
    # docs/benches/loihi.md "Loihi host set-up": pyenv's 3.10 first, else python3.10 on PATH.
    local py310=""
    if command -v pyenv >/dev/null 2>&1; then
        for candidate in "$(pyenv root)"/versions/3.10*/bin/python3; do
            if [ -x "$candidate" ]; then py310="$candidate"; fi
        done
    fi
    if [ -z "$py310" ] && command -v python3.10 >/dev/null 2>&1; then
        py310="$(command -v python3.10)"
    fi
    if [ -z "$py310" ]; then
        echo "error: no Python 3.10 (neither pyenv's nor python3.10 on PATH): the loihi driver needs one" >&2
        exit 1
    fi
    "$py310" -m venv .venv-loihi
    .venv-loihi/bin/pip install --quiet -r drivers/loihi/requirements-lava.txt
    .venv-loihi/bin/pip install --quiet -e .
    echo ".venv-loihi: $(.venv-loihi/bin/python -c 'import sys, importlib.metadata as m; print("Python", sys.version.split()[0], "lava-nc", m.version("lava-nc"))')"
}

for env in "${wanted[@]}"; do
    case "$env" in
        xylo) setup_xylo ;;
        loihi) setup_loihi ;;
        *) echo "error: unknown side environment '$env' (xylo, loihi)" >&2; exit 2 ;;
    esac
done
