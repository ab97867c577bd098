"""The loudspeaker through the real sounddevice and PortAudio (CI installs both; a CI machine
has no sound card): with no output device the error names the package, the install command
and what PortAudio sees; with one, the speaker opens on it."""

from __future__ import annotations

import os

import pytest

from hilbench.agent.driver import DriverError
from hilbench_drivers.xylo import vendor
from hilbench_drivers.xylo.playback import Speaker


def real_sounddevice():
    try:
        return vendor.sounddevice()
    except DriverError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI installs sounddevice and libportaudio2: {exc}")
        pytest.skip(str(exc))


def test_the_real_portaudio_output_device_or_the_message_naming_the_fix():
    sd = real_sounddevice()
    outputs = [d for d in sd.query_devices() if d["max_output_channels"] > 0]
    if outputs:
        assert Speaker(sd=sd).name
        return
    with pytest.raises(DriverError) as err:
        Speaker(sd=sd)
    text = str(err.value)
    assert err.value.code == "missing_sdk"
    assert "Error querying device" in text  # PortAudio's own words
    assert "pip install 'hilbench[xylo-hardware]'" in text and "libportaudio2" in text
    assert "Devices sounddevice sees:\n(no audio devices)" in text
    with pytest.raises(DriverError, match="no audio output device 'USB Audio'"):
        Speaker("USB Audio", sd=sd)
