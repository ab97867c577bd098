"""The firmware's model header is generated from the model file and is current."""

from __future__ import annotations

from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.arduino import model_header
from hilbench_drivers.arduino.model_header import DEFAULT_HEADER, DEFAULT_MODEL, model_fingerprint


def test_committed_header_is_generated_from_the_vectors_model():
    assert model_header.main(["--check"]) == 0


def test_check_fails_on_a_stale_header(tmp_path, capsys):
    stale = tmp_path / "model_data.h"
    stale.write_text(DEFAULT_HEADER.read_text().replace("HB_NUM_CLASSES 4", "HB_NUM_CLASSES 5"))
    assert model_header.main(["--check", "--out", str(stale)]) == 1
    assert "regenerate" in capsys.readouterr().err


def test_fingerprint_is_the_same_from_file_and_from_parts():
    model = QuantisedModel.load(DEFAULT_MODEL)
    rebuilt = QuantisedModel.from_parts(model.metadata(), model.arrays())
    assert model_fingerprint(rebuilt) == model_fingerprint(model)
    arrays = model.arrays()
    arrays["dense.bias"] = arrays["dense.bias"] + 1
    changed = QuantisedModel.from_parts(model.metadata(), arrays)
    assert model_fingerprint(changed) != model_fingerprint(model)
