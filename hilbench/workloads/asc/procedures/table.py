"""The ``[[asc]]`` campaign table: acoustic scene classification, single stream and power.

```toml
[[asc]]
agent = "cpu0"
fixture = true            # generate the synthetic data set (into `data`, or a cache dir)
# data = "path/to/TAU-urban-acoustic-scenes-2020-mobile-development"
# model = "asc-int8.npz"  # else trained on the train split (train_epochs, train_seed)
# model = "asc-snn.nir"   # a NIR graph (closed category), or "packaged-nir"
limit = 20                # test clips (ten 1 s samples each) for quick runs
power = true
power_method = "repeat"   # or "single_stream" (a meter aperture shorter than a stage)
idle_s = 60
active_s = 60
stream_s = [5, 10]
repetitions = 1           # idle + active windows per power run
```
Relative paths are taken from the campaign file's folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from hilbench.filehash import sha256_file_cached
from hilbench.power.align import BOUNDARY_POLICIES
from hilbench.sdk import CampaignTable, table_context
from hilbench.workloads.asc.fixture import MIN_SAMPLE_RATE
from hilbench.workloads.asc.procedures.nir import PACKAGED_NIR, is_nir_path, nir_model_path

PACKAGED = "packaged"  # model = "packaged": the model shipped in hilbench/workloads/asc/data


class AscSpec(CampaignTable):
    """One ``[[asc]]`` table: a single-stream run, and power runs when ``power = true``."""

    fixture: bool = Field(False, description="generate the synthetic stand-in data set")
    fixture_seed: int = Field(0, ge=0)
    data: str | None = Field(
        None, description="data set folder (with fixture: where to generate it; default: cache)"
    )
    model: str | None = Field(
        None,
        description='int8 model file (.npz), or "packaged" for the model shipped with hilbench '
        "(trained on the fixture); a NIR graph (.nir, inside the campaign file's folder) or "
        '"packaged-nir" for the ASC spiking network shipped as NIR (the closed category); '
        "default: trained on the train split, then cached",
    )
    modelled_mac_pj: float = Field(
        4.6, ge=0, allow_inf_nan=False,
        description="energy of one multiply-accumulate for a NIR model's modelled energy per "
        "inference (pJ; default the 45 nm figure the Neuromorphic Sequential Arena uses)")
    modelled_ac_pj: float = Field(
        0.9, ge=0, allow_inf_nan=False,
        description="energy of one accumulate for a NIR model's modelled energy per inference "
        "(pJ; default the 45 nm figure the Neuromorphic Sequential Arena uses)")
    train_epochs: int = Field(10, ge=1)
    train_seed: int = Field(0, ge=0)
    sample_rate: int = Field(16000, ge=MIN_SAMPLE_RATE)
    limit: int | None = Field(None, ge=1, description="test clips to use (quick runs)")
    power: bool = Field(False, description="also measure power (the Arduino method)")
    power_method: Literal["repeat", "single_stream"] = Field(
        "repeat",
        description='active power windows: "repeat" = each stage repeated on one held sample '
        '(the Arduino method; a CPU runs a stage repeated alone faster than in single stream, '
        'which the loop-time check flags); "single_stream" = the device runs the single-stream '
        "pipeline over the test samples and each stage's power is separated from the readings "
        "by when each stage ran (needs a meter aperture shorter than a stage)",
    )
    idle_s: float = Field(60.0, ge=0.1, allow_inf_nan=False)
    active_s: float = Field(60.0, ge=0.1, allow_inf_nan=False)
    stream_s: list[Annotated[int, Field(ge=2)]] = Field(
        default_factory=list, description="also repeat k-second streams (amortised power)"
    )
    repetitions: int = Field(1, ge=1, description="idle + active windows per power run")
    power_sample: int = Field(0, ge=0, description="test sample held for the power windows")
    boundary: Literal[BOUNDARY_POLICIES] = Field(  # type: ignore[valid-type]
        "exclude", description="samples straddling a window edge"
    )

    @field_validator("data", "model")
    @classmethod
    def _absolute(cls, value: str | None, info: ValidationInfo) -> str | None:
        ctx = table_context(info)
        if value is None or ctx is None:
            return value
        if not value:
            raise ValueError("'' is not a path")
        if info.field_name == "model" and value == PACKAGED:
            from hilbench.workloads.asc import packaged_model_path

            return str(packaged_model_path())
        if info.field_name == "model" and (value == PACKAGED_NIR or is_nir_path(value)):
            return nir_model_path(value, ctx.base_dir)
        path = ctx.path(value)
        if info.field_name == "model" and not path.is_file():
            raise ValueError(f"model file {path} not found")
        if info.field_name == "data" and not info.data.get("fixture") and not path.is_dir():
            raise ValueError(f"{path} is not a directory")
        return str(path)

    @field_validator("stream_s")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError(f"{value} repeats a length")
        return value

    @model_validator(mode="after")
    def _data_given(self) -> AscSpec:
        if self.data is None and not self.fixture:
            raise ValueError('give data = "<data set directory>" or fixture = true')
        if self.power_method == "single_stream" and self.stream_s:
            raise ValueError(
                f"stream_s = {self.stream_s} applies to power_method = \"repeat\": with "
                '"single_stream" the power windows already play consecutive test samples one '
                "after another (remove stream_s)"
            )
        return self

    @property
    def digest(self) -> str:
        """Short identity of the table's settings, part of unit keys.

        Files count by content, not by where they are: the model by its sha256, the synthetic
        fixture by its seed and rate (not the folder it is generated in). The same campaign run
        from a moved checkout, or a cassette replayed on another machine, keeps its unit keys.
        """
        settings = self.model_dump(mode="json")
        model = settings.get("model")
        if model and Path(model).is_file():
            settings["model"] = "sha256:" + sha256_file_cached(model)
        if settings.get("fixture"):
            settings.pop("data", None)
        if settings.get("power_method") == "repeat":
            # the default of tables written before the setting existed: their keys stay
            settings.pop("power_method")
        for name in ("modelled_mac_pj", "modelled_ac_pj"):  # likewise
            if settings.get(name) == type(self).model_fields[name].default:
                settings.pop(name)
        blob = json.dumps(settings, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:8]

    def energy_model(self) -> Any:
        """The per-operation energies a NIR model's modelled energy uses, and whose they are."""
        from hilbench.complexity.energy import NSA_45NM, PJ, EnergyModel

        default = (self.modelled_mac_pj == type(self).model_fields["modelled_mac_pj"].default
                   and self.modelled_ac_pj == type(self).model_fields["modelled_ac_pj"].default)
        return EnergyModel(self.modelled_mac_pj * PJ, self.modelled_ac_pj * PJ,
                           NSA_45NM if default else "the campaign's [[asc]] modelled_mac_pj / "
                           "modelled_ac_pj")

    def check_notes(self) -> list[str]:
        """For `campaign check`: the NIR graph a table runs, named by its content hash."""
        if not is_nir_path(self.model):
            return []
        from hilbench.workloads.asc.nir.model import graph_hash_of_file

        assert self.model is not None
        return [f"model: NIR graph {self.model}, graph sha256 {graph_hash_of_file(self.model)} "
                "(closed category)"]

    def params(self) -> dict[str, Any]:
        """The settings as run parameters."""
        return self.model_dump(mode="json")
