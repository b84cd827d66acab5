"""Outputs on a shared root host: no artifact is renamed over what is not a regular file.

Each test is an attack or a CI habit that used to cost something: ``--json /dev/null`` as
root replaced the machine's ``/dev/null`` with a 0644 file; a link planted in ``/tmp``
under a name a root job writes led its JSON anywhere. The device nodes are private ones
(``mknod`` in the test's directory: the numbers of ``/dev/null`` and ``/dev/full``), so a
failing test damages nothing; they need root (CAP_MKNOD) and are skipped without it.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.core.errors import ConfigError
from shmstress.core.files import (
    ArtifactError,
    append_whole,
    require_writable,
    write_text_atomically,
)
from shmstress.outputs import writing
from shmstress.outputs.target import Kind, locate, own_descriptor

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parent.parent
COUNTER = ROOT / "examples" / "plain" / "counter.py"
NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)
UNUSED_BLOCK = os.makedev(240, 77)
"""A block device number no driver answers (240-254 are for local/experimental use): a
refusal that failed would meet ENXIO, never a disk."""


def _node(path: Path, device: int, kind: int = stat.S_IFCHR) -> Path:
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    os.mknod(path, 0o666 | kind, device)
    return path


def _still_the_node(path: Path, device: int) -> bool:
    found = os.lstat(path)
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == device


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def plain_bundle(tmp_path: Path) -> Path:
    """A failing ``shmstress test`` bundle (a lost update, found in a moment)."""
    out = tmp_path / "bundles"
    assert main(["test", f"{COUNTER}:racy", "--seed", "1", "--quiet", "--out", str(out)]) == 1
    (bundle,) = out.glob("*.json")
    return bundle


def test_a_device_as_json_and_log_is_written_in_place_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    null = _node(tmp_path / "null", NULL)
    code = main(["run", "--variant", "fixed", "--duration", "0.3", "--quiet",
                 "--out", str(tmp_path / "out"), "--json", str(null), "--log", str(null)])
    assert code == 0, capsys.readouterr().err
    assert _still_the_node(null, NULL)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_device_as_show_svg_is_written_in_place(
    tmp_path: Path, plain_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    null = _node(tmp_path / "picture", NULL)
    capsys.readouterr()
    assert main(["show", str(plain_bundle), "--svg", str(null)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert _still_the_node(null, NULL)


def test_a_device_in_a_report_directory_stays_a_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    report.mkdir()
    page = _node(report / "index.html", NULL)
    fixture = ROOT / "tests" / "fixtures" / "reports" / "results-v1.jsonl"
    results = tmp_path / "results.jsonl"
    results.write_bytes(b"".join(fixture.read_bytes().splitlines(keepends=True)[:3]))
    assert main(["report", str(results), "-o", str(report)]) == 0, capsys.readouterr().err
    assert _still_the_node(page, NULL)
    assert (report / "failure_rate.png").is_file()  # the rest as always


@pytest.mark.parametrize(("variant", "duration", "code"), [
    ("fixed", "0.3", 2),  # clean: the output lost is the error
    ("gather-unchecked", "15", 1),  # stops at its violation: found, whatever the disk says
])
def test_a_full_device_is_a_full_disk_one_line_and_the_failure_keeps_exit_1(
    variant: str, duration: str, code: int, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full = _node(tmp_path / "full", FULL)
    capsys.readouterr()
    assert main(["run", "--variant", variant, "--seed", "3", "--duration", duration, "--quiet",
                 "--out", str(tmp_path / "out"), "--json", str(full)]) == code
    line = _one_line(capsys.readouterr().err)
    assert line == f"shmstress: error: cannot write the --json file {full}: " \
                   "No space left on device"
    assert _still_the_node(full, FULL)


def test_every_writer_takes_a_device_in_place(tmp_path: Path) -> None:
    """The one function under every artifact: whole files, appended lines, exclusive ones."""
    null, full = _node(tmp_path / "null", NULL), _node(tmp_path / "full", FULL)
    write_text_atomically(null, "{}\n", "the --json file")
    append_whole(null, b"{}\n", "the results file")
    with pytest.raises(ArtifactError, match="No space left on device"):
        write_text_atomically(full, "x" * 10_000, "the --json file")
    with pytest.raises(ArtifactError, match="No space left on device"):
        append_whole(full, b"{}\n", "the results file")
    with pytest.raises(ArtifactError, match="exists already"):  # evidence never replaced
        write_text_atomically(null, "{}", "the repro bundle", exclusive=True)
    assert _still_the_node(null, NULL) and _still_the_node(full, FULL)
    require_writable(null, "the --json file")  # taken as it is


@pytest.mark.parametrize("kind", ["block device", "socket", "directory"])
def test_what_cannot_take_an_output_is_refused_in_one_line(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "target"
    if kind == "block device":
        _node(path, UNUSED_BLOCK, stat.S_IFBLK)
    elif kind == "directory":
        path.mkdir()
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.close()
    before = os.lstat(path)
    for check in (lambda: require_writable(path, "the --json file"),
                  lambda: write_text_atomically(path, "{}", "the --json file")):
        with pytest.raises(ConfigError, match=f"cannot write the --json file {path}: it is a "
                           f"{kind.split(maxsplit=1)[0]}"):
            check()
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_a_fifo_is_written_while_it_is_read_and_refused_without_a_reader(
    tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ArtifactError, match="a FIFO no process reads"):
        write_text_atomically(fifo, "{}\n", "the --json file")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # `jq < fifo` started first
    try:
        write_text_atomically(fifo, '{"a": 1}\n', "the --json file")
        assert os.read(reader, 100) == b'{"a": 1}\n'
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("name", ["/dev/fd/1", "/proc/self/fd/1"])
def test_stdout_by_name_is_the_commands_own_stdout_after_what_it_printed(
    name: str, tmp_path: Path
) -> None:
    """``--json /dev/fd/1 > file``: the JSON follows the summary, as gawk writes it. The
    name opened again would write over the file's start; a rename into the directory of a
    descriptor name fails (and into /dev, for ``/dev/stdout``, replaced the link)."""
    out = tmp_path / "stdout.txt"
    with out.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "shmstress", "run", "--variant", "fixed", "--duration",
             "0.3", "--quiet", "--out", str(tmp_path / "out"), "--json", name],
            stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("shmstress run: tracker dra, variant fixed")
    assert text.rstrip().endswith("}") and '"exit_reason": "duration-reached"' in text


def test_dev_stdout_and_stderr_are_the_commands_own_descriptors() -> None:
    """Checked by name only: a test writing /dev/stdout through a bug would replace the
    machine's link."""
    for name, descriptor in (("/dev/stdout", 1), ("/dev/stderr", 2), ("/dev/fd/7", 7),
                             (f"/proc/{os.getpid()}/fd/3", 3)):
        found = locate(Path(name))
        assert (found.kind, found.descriptor) == (Kind.DESCRIPTOR, descriptor)
    assert own_descriptor(Path("/proc/1/fd/1")) is None or os.getpid() == 1


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory like /tmp: world-writable and sticky, owned by us."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    yield shared


OTHER_UID = 64_999
"""Another user, by number: root can own a file to any uid without an account for it."""


def _as_other_user(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file of another uid needs root")
    os.lchown(path, OTHER_UID, OTHER_UID)


def test_a_link_another_user_planted_in_a_shared_dir_is_not_followed(
    shared_dir: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("root's own file\n")
    planted = shared_dir / "result.json"
    planted.symlink_to(victim)
    _as_other_user(planted)
    for check in (lambda: require_writable(planted, "the --json file"),
                  lambda: write_text_atomically(planted, "{}\n", "the --json file"),
                  lambda: append_whole(planted, b"{}\n", "the results file")):
        with pytest.raises(ConfigError, match=f"{planted} is a symbolic link of uid "
                           f"{OTHER_UID} in the shared directory"):
            check()
    assert victim.read_text() == "root's own file\n"
    assert planted.is_symlink()


def test_a_fifo_another_user_planted_in_a_shared_dir_is_refused(shared_dir: Path) -> None:
    planted = shared_dir / "result.json"
    os.mkfifo(planted)
    _as_other_user(planted)
    with pytest.raises(ConfigError, match="is a FIFO of uid"):
        require_writable(planted, "the --json file")


def test_a_link_of_ours_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "results" / "run.json"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(Path("results") / "run.json")
    write_text_atomically(link, "new\n", "the --json file")
    assert link.is_symlink() and real.read_text() == "new\n"
    dangling = tmp_path / "next.json"
    dangling.symlink_to(Path("results") / "next.json")
    write_text_atomically(dangling, "made\n", "the --json file")
    assert dangling.is_symlink() and (real.parent / "next.json").read_text() == "made\n"


def test_a_device_is_accepted_without_probing_its_directory_and_a_probe_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    null = _node(tmp_path / "null", NULL)
    before = sorted(os.listdir(tmp_path))
    probed: list[Path] = []
    real_probe = writing.probe_directory
    monkeypatch.setattr(writing, "probe_directory", lambda d: probed.append(d) or real_probe(d))
    require_writable(null, "the --json file")
    assert probed == []  # /dev itself is never written to
    require_writable(tmp_path / "new.json", "the --json file")
    assert probed == [tmp_path]
    assert sorted(os.listdir(tmp_path)) == before


def test_a_name_too_long_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="File name too long"):
        require_writable(tmp_path / ("a" * 300), "the --json file")
    with pytest.raises(ArtifactError, match="File name too long"):
        write_text_atomically(tmp_path / ("a" * 300), "{}", "the --json file")


def test_an_exclusive_write_never_replaces_anything_at_its_name(tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.json"
    os.mkfifo(fifo)
    with pytest.raises(ArtifactError, match="exists already"):
        write_text_atomically(fifo, "{}", "the repro bundle", exclusive=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["bundle.json"]  # no temporary left
