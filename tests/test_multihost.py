"""A campaign spread over two "hosts" (execnet socket servers on loopback) by pytest-xdist,
merged by the controller into one results.jsonl and one report."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shmstress.campaign import distributed
from shmstress.campaign.grid import expand
from shmstress.campaign.runner import RESULTS_FILE, resume_spec
from shmstress.cli.main import main
from shmstress.reports import group_by_config, load_results_file

SHMSTRESS = [sys.executable, "-m", "shmstress"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FREE_BUDGET_S = 5.0  # a racy free trial ends at its violation (quiet: well under a second); with 4
# free runs and a suite on the 2 CPUs, both of a racy config's trials of 0.5 s found none


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, server: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, "socket server exited"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"socket server on port {port} never listened")


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[list[str]]:
    """Two execnet socket servers, as `python -m execnet.script.socketserver` runs on a host."""
    servers: list[subprocess.Popen[bytes]] = []
    specs = []
    try:
        for name in ("host-a", "host-b"):
            home = tmp_path / name
            home.mkdir()
            port = _free_port()
            server = subprocess.Popen(
                [sys.executable, "-m", "execnet.script.socketserver", f"127.0.0.1:{port}"],
                cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            servers.append(server)
            _wait_listening(port, server)
            specs.append(f"socket=127.0.0.1:{port}")
        yield specs
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def test_campaign_over_two_socket_gateways_merges_into_one_report(
    tmp_path: Path, two_hosts: list[str]
) -> None:
    done = subprocess.run(
        [
            *SHMSTRESS, "campaign", "--out", "night", "--variant", "gather-unchecked,fixed",
            "--workers", "binder=2", "--noise", "0.1", "--strategy", "free,random_walk",
            "--trials", "2", "--duration", str(FREE_BUDGET_S), "--seed", "5",
            *(f"--tx={spec}" for spec in two_hosts),
        ],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8/8 trials over 2 gateways" in done.stdout

    out = tmp_path / "night"  # --out was relative to the caller's directory
    spec = resume_spec(out)
    records = [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
    assert {r["campaign"] for r in records} == {spec.campaign}
    assert {r["runner"] for r in records} <= {"gw0", "gw1"}  # xdist chose the host
    expected = {t.trial_id: t.seed for t in expand(spec)}
    assert len(records) == len(expected) == 8
    assert {(r["config_key"], r["trial"]): r["seed"] for r in records} == expected

    stats = group_by_config(load_results_file(out / RESULTS_FILE).trials)
    assert all(s.rate > 0 for s in stats if s.variant == "gather-unchecked")
    assert all((s.trials, s.failures) == (2, 0) for s in stats if s.variant == "fixed")
    # Bundles travel from the hosts to the controller, which writes them next to the
    # results; they, and the records, stay out of the JUnit XML, which has one property
    # per fact instead.
    failures = [r for r in records if r["outcome"] == "violation"]
    assert failures
    assert all((out / str(r["bundle"])).is_file() for r in failures)
    junit = (out / "junit-campaign.xml").read_text(encoding="utf-8")
    assert "shmstress_trial" not in junit and "shmstress_bundle" not in junit
    assert junit.count('<property name="seed"') == len(records)
    assert junit.count('<property name="invariant"') == len(failures)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "dra/gather-unchecked b2 i1 g1 free p=0.1" in page
    assert "dra/gather-unchecked b2 i1 g1 controlled/random_walk" in page
    assert "shmstress replay bundles/" in page
    assert (out / "failure_rate.png").read_bytes()[:8] == PNG_MAGIC


def test_distributed_campaign_that_recorded_no_trial_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost_every_result(spec: object, out_dir: Path, gateways: object) -> int:
        return 0  # pytest passed, yet nothing reached results.jsonl

    monkeypatch.setattr(distributed, "run_distributed", lost_every_result)
    code = main([
        "campaign", "--out", str(tmp_path), "--variant", "fixed", "--workers", "binder=1",
        "--noise", "0", "--strategy", "free", "--trials", "2", "--tx", "popen",
    ])
    assert code == 4
    assert "only 0 of the campaign's 2 trials reached" in capsys.readouterr().err


def test_distributed_campaign_cannot_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([
        "campaign", "--out", str(tmp_path), "--variant", "fixed", "--quiet", "--trials", "1",
        "--duration", "0.1", "--workers", "binder=1", "--noise", "0", "--strategy", "free",
    ]) == 0
    assert main(["campaign", "--out", str(tmp_path), "--resume", "--tx", "popen"]) == 2
    assert "--resume is for local campaigns" in capsys.readouterr().err
