"""``run --rate``: an absolute target rate sets the time scale from the schedule's own offered rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.cli_run import run_cli
from tests.unit.test_verbatim import trace

from mimesisbench.errors import ConfigError
from mimesisbench.run.config import RunConfig
from mimesisbench.synth.verbatim import manifest_for, verbatim_schedule, write_verbatim


def test_the_scale_makes_the_mean_offered_rate_the_target() -> None:
    config = RunConfig(schedule="s", backend="null", rate=500.0)
    # 1,000 operations over 10 s are offered at 100/s: 500/s needs a fifth of the time
    assert config.with_rate(1000, 10_000_000).time_scale == pytest.approx(0.2)
    assert RunConfig(schedule="s", backend="null").with_rate(1000, 10_000_000).time_scale == 1.0
    with pytest.raises(ConfigError, match="all due at once"):
        config.with_rate(1000, 0)
    with pytest.raises(ConfigError, match="positive"):
        RunConfig(schedule="s", backend="null", rate=0.0)


def test_run_at_a_rate_records_the_scale_it_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(i * 10, "getfileinfo", f"/d/f{i % 7}") for i in range(200)]  # 200 operations over 1.99 s
    v = verbatim_schedule(trace(*rows))
    schedule = tmp_path / "s"
    write_verbatim(v, schedule, manifest_for(v, sources=["test"], snapshot=None))
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", str(schedule), "--backend", "null", "--rate", "2k/s", "--out", str(out), "-q"], capsys)
    assert code == 0, err
    config = json.loads(next(out.iterdir()).joinpath("config.json").read_text())
    assert config["rate"] == 2000.0
    assert config["time_scale"] == pytest.approx((200 / 1.99) / 2000.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "fast"], "cannot read 'fast'"),
        (["--rate", "-5/s"], "positive"),
        (["--rate", "100/s", "--time-scale", "0.5"], "not both"),
    ],
)
def test_bad_rates_are_refused(args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["run", str(tmp_path / "none"), "--backend", "null", *args], capsys)
    assert code == 2 and message in err
