"""Designed experiments: designs (pyDOE), their alias structure, and the effects of their runs
against textbook answers (Jain, The Art of Computer Systems Performance Analysis, ch. 18-19)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_run import run_cli
from click.testing import CliRunner
from scipy import stats

from mimesisbench.analysis.designs import design_by_resolution, fractional_factorial, full_factorial
from mimesisbench.analysis.effects import analyze_sweep, analyze_two_level, lenth_margin
from mimesisbench.analysis.runs_table import analyze_runs
from mimesisbench.cli.main import _register, cli
from mimesisbench.errors import ConfigError

#: Jain's 2^2 r=3 example (Table 18.1): memory (A) and cache (B), three MIPS figures per point
JAIN_22R = {(-1, -1): (15, 18, 12), (1, -1): (45, 48, 51), (-1, 1): (25, 28, 19), (1, 1): (75, 75, 81)}
#: Jain's 2^(7-4) example (ch. 19): A, B, C a full factorial in standard order (A fastest),
#: D=AB, E=AC, F=BC, G=ABC, and its eight responses
JAIN_74_Y = (20, 35, 7, 42, 36, 50, 45, 82)


def _jain_22r() -> tuple[np.ndarray, np.ndarray]:
    x = [point for point, ys in JAIN_22R.items() for _ in ys]
    y = [v for ys in JAIN_22R.values() for v in ys]
    return np.array(x), np.array(y, dtype=float)


def test_2_2_r3_reproduces_jain() -> None:
    x, y = _jain_22r()
    a = analyze_two_level(x, y, {"A": "memory", "B": "cache"}, "mips")
    effects = {e.name: e for e in a.effects}
    assert a.mean_response == pytest.approx(41.0, rel=1e-12)
    assert {n: e.q for n, e in effects.items()} == pytest.approx({"A": 21.5, "B": 9.5, "AB": 5.0}, rel=1e-12)
    assert effects["A"].effect == pytest.approx(43.0, rel=1e-12)
    # SSA, SSB, SSAB and SSE of 7032: 5547, 1083, 300 and 102
    shares = {n: e.variation_explained for n, e in effects.items()}
    assert shares == pytest.approx({"A": 5547 / 7032, "B": 1083 / 7032, "AB": 300 / 7032}, rel=1e-9)
    assert a.error_variation == pytest.approx(102 / 7032, rel=1e-9)
    # 2^2 (r - 1) = 8 degrees of freedom; s_q = s_e / sqrt(2^2 r) with s_e^2 = 102 / 8
    assert a.dof == 8 and a.replications == 3 and a.method == "t"
    half = stats.t.ppf(0.975, 8) * np.sqrt(102 / 8) / np.sqrt(12)
    assert a.mean_ci95 == pytest.approx((41 - half, 41 + half), rel=1e-9)
    assert effects["AB"].ci95 == pytest.approx((2 * (5 - half), 2 * (5 + half)), rel=1e-9)
    assert all(e.significant for e in effects.values())


def test_2_7_4_reproduces_jain() -> None:
    base = [(a, b, c) for c in (-1, 1) for b in (-1, 1) for a in (-1, 1)]
    x = np.array([(a, b, c, a * b, a * c, b * c, a * b * c) for a, b, c in base])
    a = analyze_two_level(x, np.array(JAIN_74_Y, dtype=float), {k: k for k in "ABCDEFG"}, "y")
    q = {e.name: e.q for e in a.effects}
    assert a.mean_response == pytest.approx(39.625, rel=1e-12)
    assert q == pytest.approx({"A": 12.625, "B": 4.375, "C": 13.625, "D": 5.375, "E": 0.125, "F": 5.875, "G": 0.375},
                              rel=1e-9)
    share = {e.name: 100 * e.variation_explained for e in a.effects}
    assert share == pytest.approx({"A": 37.26, "B": 4.47, "C": 43.40, "D": 6.75, "E": 0.004, "F": 8.07, "G": 0.03},
                                  abs=0.006)
    assert a.structure.resolution == 3 and a.dof == 0 and a.method == "lenth"
    assert {"ABD", "ACE", "BCF", "ABCG"} <= set(a.structure.defining_relation)
    assert "BD" in {e.name: e for e in a.effects}["A"].aliases


def test_lenth_margin_known_answer() -> None:
    # s0 = 1.5 * median|c| = 1.2; the |c| below 3.0 have median 0.65: PSE = 0.975 on 7/3 dof
    margin, pse, d = lenth_margin(np.array([10.0, -1.0, 0.5, 0.8, -0.3, 0.2, 1.2]))
    assert pse == pytest.approx(0.975, rel=1e-12) and d == pytest.approx(7 / 3)
    assert margin == pytest.approx(stats.t.ppf(0.975, 7 / 3) * 0.975, rel=1e-12)


def test_unreplicated_design_finds_its_one_strong_factor_by_lenth() -> None:
    design = full_factorial(["A", "B", "C", "D"])
    rng = np.random.default_rng(4)
    y = 50 + 8 * design.matrix[:, 1] + rng.normal(0, 0.5, design.runs)
    a = analyze_two_level(design.matrix, y, {k: k for k in "ABCD"}, "y")
    assert a.method == "lenth" and a.dof == 0 and len(a.effects) == 15
    assert [e.name for e in a.effects if e.significant] == ["B"]
    assert any("Lenth" in w for w in a.warnings)


def test_fractional_design_from_generators() -> None:
    d = fractional_factorial(["A", "B", "C", "D", "E", "F"], "D=AB E=AC F=BC")
    m = d.matrix.astype(int)
    assert d.runs == 8 and d.generators == ("D=AB", "E=AC", "F=BC")
    assert np.array_equal(m[:, 3], m[:, 0] * m[:, 1]) and np.array_equal(m[:, 5], m[:, 1] * m[:, 2])
    assert np.array_equal(m.T @ m, 8 * np.eye(6, dtype=int))  # balanced and orthogonal
    structure = d.aliases()
    assert set(structure.defining_relation) == {"ABD", "ACE", "BCF", "DEF", "ABEF", "ACDF", "BCDE"}
    assert structure.resolution == 3 and len(structure.classes) == 7
    half = fractional_factorial(["A", "B", "C", "D"], "D=-ABC")
    assert half.aliases().defining_relation == ("-ABCD",) and half.aliases().resolution == 4
    assert full_factorial(list("ABCDEF")).runs == 64 and full_factorial(list("ABC")).aliases().resolution is None


def test_design_by_resolution_reads_back_its_generators() -> None:
    d = design_by_resolution(["A", "B", "C", "D", "E", "F"], 4)
    assert d.runs == 16 and d.aliases().resolution is not None and d.aliases().resolution >= 4
    again = fractional_factorial(list(d.factors), " ".join(d.generators))
    assert {r.tobytes() for r in again.matrix} == {r.tobytes() for r in d.matrix}


@pytest.mark.parametrize("generators", ["D=AX", "D=A", "D=AB D=AC", "Q=AB", "D=AD", "DAB"])
def test_bad_generators_are_refused(generators: str) -> None:
    with pytest.raises(ConfigError, match="generators"):
        fractional_factorial(["A", "B", "C", "D"], generators)


def test_run_order_is_each_run_once_and_seeded() -> None:
    d = full_factorial(["A", "B", "C"])
    order = d.run_order(3, seed=5)
    assert sorted(map(tuple, order.tolist())) == sorted(itertools.product(range(8), range(3)))
    assert np.array_equal(order, d.run_order(3, seed=5)) and not np.array_equal(order, d.run_order(3, seed=6))


def test_significant_effect_aliased_with_interactions_names_the_fold_over() -> None:
    d = fractional_factorial(["A", "B", "C", "D"], "D=ABC")  # resolution IV: AB = CD
    m = d.matrix.astype(float)
    y = np.tile(20 + 6 * m[:, 0] * m[:, 1], 2) + np.repeat([0.1, -0.1], d.runs)
    a = analyze_two_level(np.tile(d.matrix, (2, 1)), y, {k: k for k in "ABCD"}, "y")
    ab = next(e for e in a.effects if e.name == "AB")
    assert ab.significant and ab.aliases == ("CD",)
    assert any("AB" in w and "fold the design over on factor A" in w for w in a.warnings)
    iii = fractional_factorial(["A", "B", "C"], "C=AB")
    y3 = np.tile(10 + 5 * iii.matrix[:, 0].astype(float), 2) + np.repeat([0.1, -0.1], 4)
    a3 = analyze_two_level(np.tile(iii.matrix, (2, 1)), y3, {k: k for k in "ABC"}, "y")
    assert any("effect A" in w and "every factor's signs reversed" in w for w in a3.warnings)


def test_an_unreplicated_fraction_warns_of_a_large_effect_that_may_be_an_interaction() -> None:
    """The 2^(6-3) of the thesis (D=AB, E=AC, F=BC), unreplicated, on a noisy response made of A, C
    and their interaction AC: E (aliased with AC) explains a seventh of the variation, and Lenth's
    test on 8 runs does not call it significant; the warning still says E may be AC."""
    d = fractional_factorial(list("ABCDEF"), "D=AB E=AC F=BC")
    m = d.matrix.astype(float)
    y = 300 + 200 * m[:, 0] - 150 * m[:, 2] - 150 * m[:, 0] * m[:, 2] + np.array([120, -90, 60, 30, -50, 80, -110, -40])
    a = analyze_two_level(d.matrix, y, {k: k for k in "ABCDEF"}, "y")
    e = next(x for x in a.effects if x.name == "E")
    assert not e.significant and e.variation_explained > 0.1 and "AC" in e.aliases
    assert any(w.startswith("effect E explains") and "aliased with AC" in w for w in a.warnings)


def test_a_missing_run_keeps_the_effects_of_an_exact_model() -> None:
    x, _ = _jain_22r()
    y = 40 + 20 * x[:, 0] - 3 * x[:, 1] + 2 * x[:, 0] * x[:, 1] + np.tile([0.5, -0.5, 0.0], 4)
    a = analyze_two_level(x[1:], y[1:], {"A": "a", "B": "b"}, "y")  # one replication lost: unbalanced
    q = {e.name: e.q for e in a.effects}
    assert a.replications is None and a.dof == 7
    assert q["A"] == pytest.approx(20, abs=0.2) and q["B"] == pytest.approx(-3, abs=0.2)
    shares = {e.name: e.variation_explained for e in a.effects}  # what leaving each out costs: not additive now
    assert all(0 <= v <= 1 for v in shares.values()) and max(shares, key=shares.__getitem__) == "A"


def test_a_design_with_a_point_missing_is_refused() -> None:
    d = full_factorial(["A", "B", "C"])
    with pytest.raises(ConfigError, match="not a regular two-level design"):
        analyze_two_level(d.matrix[1:], np.arange(7, dtype=float), {k: k for k in "ABC"}, "y")


def test_sweep_means_and_intervals() -> None:
    levels = ["8", "8", "8", "64", "64", "64", "256"]
    y = np.array([10.0, 12.0, 14.0, 30.0, 33.0, 36.0, 50.0])
    s = analyze_sweep(levels, y, "handlers", "ops")
    by = {m.level: m for m in s.levels}
    assert [m.level for m in s.levels] == ["8", "64", "256"] and by["8"].mean == pytest.approx(12.0)
    half = stats.t.ppf(0.975, 2) * 2.0 / np.sqrt(3)
    assert by["8"].ci95 == pytest.approx((12 - half, 12 + half), rel=1e-12)
    assert by["256"].ci95 is None and s.dof == 4


def test_runs_table_codes_named_levels() -> None:
    table = pl.DataFrame({"lock": ["fair", "unfair"] * 4, "handlers": ["10", "10", "100", "100"] * 2,
                          "ops": ["5", "7", "9", "12", "5.5", "7.5", "9.5", "12.5"]})
    a = analyze_runs(table, "ops")
    assert a.to_json()["coding"] == {"lock": {"-1": "fair", "+1": "unfair"}, "handlers": {"-1": "10", "+1": "100"}}
    q = {e.name: e.q for e in a.effects}  # type: ignore[union-attr]
    assert q["A"] == pytest.approx((7 + 12 + 7.5 + 12.5 - 5 - 9 - 5.5 - 9.5) / 8, rel=1e-9)  # unfair less fair, halved


def test_cli_design_then_analyze_round_trip(tmp_path: Path) -> None:
    _register()
    runner = CliRunner()
    out = tmp_path / "design.csv"
    r = runner.invoke(cli, ["experiment", "design", "--factors", "handlers,lock,audit", "--replications", "2",
                            "--seed", "9", "-o", str(out)])
    assert r.exit_code == 0, r.output
    table = pl.read_csv(out, infer_schema=False)
    assert table.height == 16 and table.columns[:3] == ["order", "point", "replication"]
    h = table["handlers"].cast(pl.Int64)
    filled = table.with_columns(response=(100 + 25 * h + pl.col("replication").cast(pl.Int64)).cast(pl.String))
    filled.write_csv(out)
    r = runner.invoke(cli, ["experiment", "analyze", str(out), "--response", "response", "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.output)
    assert set(result) >= {"effects", "mean_response", "dof", "aliases"}
    assert result["factors"] == {"A": "handlers", "B": "lock", "C": "audit"} and result["dof"] == 8
    assert result["effects"]["A"]["effect"] == pytest.approx(50.0, rel=1e-9)
    assert result["effects"]["A"]["significant"] and not result["effects"]["B"]["significant"]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--response", "nope"], 2, "--response 'nope': not a column"),
    (["--response", "ops", "--factors", "lock,zzz"], 2, "zzz not a column"),
    (["--response", "lock"], 2, "a value is not a number"),
])
def test_cli_analyze_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                args: list[str], code: int, message: str) -> None:
    runs = tmp_path / "runs.csv"
    runs.write_text("lock,handlers,ops\nfair,10,5\nunfair,10,7\nfair,100,9\nunfair,100,12\n")
    exit_code, _, err = run_cli(["experiment", "analyze", str(runs), *args], capsys)
    assert exit_code == code and message in err


def test_cli_analyze_missing_file_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["experiment", "analyze", str(tmp_path / "none.csv"), "--response", "y"], capsys)
    assert code == 3 and "no such file" in err
