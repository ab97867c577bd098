"""The firmware's model header is generated from the model file and is current."""

from __future__ import annotations

from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.arduino import model_header
from hilbench_drivers.arduino.model_header import VECTORS_HEADER, VECTORS_MODEL, model_fingerprint


def test_committed_headers_are_generated_from_the_packaged_and_vectors_models():
    assert model_header.main(["--check"]) == 0


def test_check_fails_on_a_stale_header(tmp_path, capsys):
    stale = tmp_path / "model_data.h"
    stale.write_text(VECTORS_HEADER.read_text().replace("HB_NUM_CLASSES 4", "HB_NUM_CLASSES 5"))
    argv = ["--check", "--model", str(VECTORS_MODEL), "--out", str(stale)]
    assert model_header.main(argv) == 1
    assert "regenerate" in capsys.readouterr().err


def test_fingerprint_is_the_same_from_file_and_from_parts():
    model = QuantisedModel.load(VECTORS_MODEL)
    rebuilt = QuantisedModel.from_parts(model.metadata(), model.arrays())
    assert model_fingerprint(rebuilt) == model_fingerprint(model)
    arrays = model.arrays()
    arrays["dense.bias"] = arrays["dense.bias"] + 1
    changed = QuantisedModel.from_parts(model.metadata(), arrays)
    assert model_fingerprint(changed) != model_fingerprint(model)
