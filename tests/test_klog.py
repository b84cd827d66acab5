"""Tests for harness.klog: golden lines in the reference log's shape, Go quoting, round trips."""

from __future__ import annotations

import io
import json
import logging
import math
import string
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shmstress.plugin.words import Raw
from shmstress.render.klog import (
    PID_WIDTH,
    KlogEvent,
    KlogFormatter,
    format_event,
    format_value,
    go_quote,
    level_for,
    parse_line,
)
from shmstress.trackers.dra.names import Naming
from shmstress.trackers.dra.words import DraWords

NS = "testdra-all-usesallresources-hvs5d"


def local_ts(microsecond: int) -> float:
    """Epoch seconds of a fixed local wall time, so the golden text is the same in every zone."""
    return datetime(2026, 1, 15, 15, 11, 4, microsecond).timestamp()


# --- golden lines -------------------------------------------------------------------------


def test_golden_plain_message() -> None:
    event = KlogEvent(
        file="dra_manager.go",
        line=263,
        level="I",
        time=local_ts(407714),
        pid=18778,
        logger="scheduler",
        message="Starting GatherAllocatedState",
        fields=(),
    )
    assert format_event(event) == (
        "dra_manager.go:263: I0115 15:11:04.407714   18778] scheduler: "
        "Starting GatherAllocatedState"
    )


def test_golden_string_fields() -> None:
    event = KlogEvent(
        file="allocateddevices.go",
        line=189,
        level="I",
        time=local_ts(407945),
        pid=18066,
        logger="scheduler",
        message="Observed device allocation",
        fields=(
            ("device", f"{NS}.driver/worker-5/worker-5-device-094"),
            ("claim", f"{NS}/claim-0553"),
        ),
    )
    assert format_event(event) == (
        "allocateddevices.go:189: I0115 15:11:04.407945   18066] scheduler: "
        'Observed device allocation device="testdra-all-usesallresources-hvs5d.driver/'
        'worker-5/worker-5-device-094" claim="testdra-all-usesallresources-hvs5d/claim-0553"'
    )


def test_golden_raw_value() -> None:
    event = KlogEvent(
        file="dra_manager.go",
        line=201,
        level="I",
        time=local_ts(408008),
        pid=89109,
        logger="scheduler",
        message="Removed in-flight claim",
        fields=(
            ("claim", f"{NS}/claim-0553"),
            ("uid", Raw("<types.UID>: a84d3c4d-f752-4cfd-8993-f4ce58643685")),
            ("version", "1211"),
        ),
    )
    line = format_event(event)
    assert line == (
        "dra_manager.go:201: I0115 15:11:04.408008   89109] scheduler: "
        'Removed in-flight claim claim="testdra-all-usesallresources-hvs5d/claim-0553" '
        'uid=<types.UID>: a84d3c4d-f752-4cfd-8993-f4ce58643685 version="1211"'
    )
    assert parse_line(line).fields == dict(event.fields)


ALLOCATION = {
    "devices": {
        "results": [
            {
                "request": "req-1",
                "driver": f"{NS}.driver",
                "pool": "worker-5",
                "device": "worker-5-device-094",
            }
        ]
    },
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-5"]}]}
        ]
    },
    "allocationTimestamp": "2026-01-15T14:11:04Z",
}

ALLOCATION_BLOCK = (
    "allocation=<\n"
    "\t{\n"
    '\t  "devices": {\n'
    '\t    "results": [\n'
    "\t      {\n"
    '\t        "request": "req-1",\n'
    '\t        "driver": "testdra-all-usesallresources-hvs5d.driver",\n'
    '\t        "pool": "worker-5",\n'
    '\t        "device": "worker-5-device-094"\n'
    "\t      }\n"
    "\t    ]\n"
    "\t  },\n"
    '\t  "nodeSelector": {\n'
    '\t    "nodeSelectorTerms": [\n'
    "\t      {\n"
    '\t        "matchFields": [\n'
    "\t          {\n"
    '\t            "key": "metadata.name",\n'
    '\t            "operator": "In",\n'
    '\t            "values": [\n'
    '\t              "worker-5"\n'
    "\t            ]\n"
    "\t          }\n"
    "\t        ]\n"
    "\t      }\n"
    "\t    ]\n"
    "\t  },\n"
    '\t  "allocationTimestamp": "2026-01-15T14:11:04Z"\n'
    "\t}\n"
    " >"
)


def test_golden_multi_line_value() -> None:
    event = KlogEvent(
        file="dynamicresources.go",
        line=1157,
        level="I",
        time=local_ts(408044),
        pid=89109,
        logger="scheduler",
        message="Removed claim from in-flight claims",
        fields=(
            ("pod", f"{NS}/my-pod-0553"),
            ("claim", f"{NS}/claim-0553"),
            ("uid", Raw("<types.UID>: a84d3c4d-f752-4cfd-8993-f4ce58643685")),
            ("resourceVersion", "5680"),
            ("allocation", json.dumps(ALLOCATION, indent=2)),
        ),
    )
    line = format_event(event)
    assert line == (
        "dynamicresources.go:1157: I0115 15:11:04.408044   89109] scheduler: "
        'Removed claim from in-flight claims pod="testdra-all-usesallresources-hvs5d/my-pod-0553" '
        'claim="testdra-all-usesallresources-hvs5d/claim-0553" '
        "uid=<types.UID>: a84d3c4d-f752-4cfd-8993-f4ce58643685 "
        'resourceVersion="5680" ' + ALLOCATION_BLOCK
    )
    parsed = parse_line(line)
    assert parsed.fields == dict(event.fields)
    assert json.loads(str(parsed.fields["allocation"])) == ALLOCATION


def test_golden_gather_result_as_the_set_of_devices() -> None:
    # The seed's "Finished GatherAllocatedState allocatedDevices=<map... | len:2>: {": the set
    # is shown whole, so a reader sees which device is missing; an empty set stays on the line.
    words = DraWords(Naming(nodes=8, devices_per_node=100))

    def finished(devices: tuple[int, ...]) -> str:
        message, fields = words.event("Finished GatherAllocatedState",
                                      (("allocatedDevices", devices),))
        return format_event(KlogEvent("dra_manager.go", 265, "I", local_ts(408264), 18778,
                                      words.logger, message, fields))

    head = "dra_manager.go:265: I0115 15:11:04.408264   18778] scheduler: "
    line = finished((595, 596))
    assert line == (
        head + "Finished GatherAllocatedState allocatedDevices=<\n"
        "\t[\n"
        '\t  "driver.example.com/worker-5/worker-5-device-095",\n'
        '\t  "driver.example.com/worker-5/worker-5-device-096"\n'
        "\t]\n"
        " >"
    )
    assert json.loads(str(parse_line(line).fields["allocatedDevices"])) == [
        "driver.example.com/worker-5/worker-5-device-095",
        "driver.example.com/worker-5/worker-5-device-096",
    ]
    assert finished(()) == head + "Finished GatherAllocatedState allocatedDevices=[]"
    assert parse_line(finished(())).fields == {"allocatedDevices": []}


def test_explicit_time_zone_and_datetime_time() -> None:
    instant = datetime(2026, 1, 15, 14, 11, 4, 407714, tzinfo=UTC)
    plus_one = timezone(timedelta(hours=1))
    by_float = KlogEvent("a.go", 1, "W", instant.timestamp(), 7, "s", "m")
    by_datetime = KlogEvent("a.go", 1, "W", instant, 7, "s", "m")
    expected = "a.go:1: W0115 15:11:04.407714       7] s: m"
    assert format_event(by_float, tz=plus_one) == expected
    assert format_event(by_datetime, tz=plus_one) == expected
    naive = KlogEvent("a.go", 1, "E", datetime(2026, 1, 15, 15, 11, 4, 407714), 7, "s", "m")
    assert format_event(naive) == expected.replace("W0115", "E0115")


# --- pid column ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pid", "column"),
    [
        (1, "       1]"),
        (18778, "   18778]"),
        (4194304, " 4194304]"),  # Linux pid_max upper bound, 7 digits: exactly the column
        (12345678, " 12345678]"),  # wider than the column: still one separating space
    ],
)
def test_pid_column(pid: int, column: str) -> None:
    line = format_event(KlogEvent("f.py", 3, "I", local_ts(5), pid, "lg", "msg"))
    assert line == f"f.py:3: I0115 15:11:04.000005{column} lg: msg"
    assert parse_line(line).pid == pid


def test_pid_width_follows_the_design() -> None:
    # DESIGN section 4: "<pid right-aligned in 7>", three spaces before a five-digit pid.
    assert PID_WIDTH == 7
    line = format_event(KlogEvent("dra_manager.go", 263, "I", local_ts(407714), 18778,
                                  "scheduler", "Starting GatherAllocatedState"))
    assert "15:11:04.407714   18778] " in line


# --- value rendering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('say "hi"', r'"say \"hi\""'),
        ("C:\\dir\\", r'"C:\\dir\\"'),
        ("a\tb", r'"a\tb"'),
        ("cr\r", r'"cr\r"'),
        ("\x07\x08\x0c\x0b", r'"\a\b\f\v"'),
        ("\x00\x01\x1b[0m", r'"\x00\x01\x1b[0m"'),
        ("del\x7f", r'"del\x7f"'),
        ("it's", '"it\'s"'),
        ("café 日本 😀", '"café 日本 😀"'),
        ("nbsp\u00a0", r'"nbsp\u00a0"'),
        ("zwsp\u200b", r'"zwsp\u200b"'),
        ("nel\u0085", r'"nel\u0085"'),
        ("shy\u00ad", r'"shy\u00ad"'),
        ("ls\u2028", r'"ls\u2028"'),
        ("tag\U000e0001", r'"tag\U000e0001"'),
        ("a=b c", '"a=b c"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted
    assert format_value(text) == quoted
    line = format_event(KlogEvent("q.go", 1, "I", 0.0, 1, "q", "m", (("v", text),)))
    assert parse_line(line).fields == {"v": text}


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (0, "0"),
        (-42, "-42"),
        (10**20, "100000000000000000000"),
        (1.5, "1.5"),
        (1.0, "1.0"),
        (-0.25, "-0.25"),
        (1e20, "1e+20"),
        (1e-7, "1e-07"),
        ({"b": 1, "a": [1, 2]}, '{"b":1,"a":[1,2]}'),
        ({"k v": "x y"}, '{"k v":"x y"}'),
        ({"nl": "a\nb"}, '{"nl":"a\\nb"}'),
        ({"nbsp": "\u00a0"}, '{"nbsp":"\\u00a0"}'),
        ({"tag": "\U000e0001"}, '{"tag":"\\udb40\\udc01"}'),
        ([], "[]"),
        ((1, "x"), '[1,"x"]'),
        (Raw("<types.UID>: abc"), "<types.UID>: abc"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
    ],
)
def test_format_value(value: object, rendered: str) -> None:
    assert format_value(value) == rendered


def test_nan_round_trips() -> None:
    assert format_value(math.nan) == "NaN"
    line = format_event(KlogEvent("n.go", 1, "I", 0.0, 1, "n", "m", (("x", math.nan),)))
    assert math.isnan(float(str(parse_line(line).fields["x"])))


def test_other_objects_render_as_strings() -> None:
    class Thing:
        def __str__(self) -> str:
            return 'thing "one"'

    assert format_value(Thing()) == r'"thing \"one\""'
    assert format_value({(1, 2): 3}) == '"{(1, 2): 3}"'  # JSON cannot hold tuple keys


def test_multi_line_layout() -> None:
    assert format_value("a\nb") == "<\n\ta\n\tb\n >"
    assert format_value("\tindented\n >") == "<\n\t\tindented\n\t >\n >"
    # A trailing line break gets its own (empty) line so it is not lost.
    assert format_value("a\nb\n") == "<\n\ta\n\tb\n\t\n >"
    assert format_value(Raw("x\ny")) == "<\n\tx\n\ty\n >"
    line = format_event(
        KlogEvent("m.go", 9, "E", local_ts(0), 5, "m", "boom", (("tb", "a\nb\n"), ("n", 3)))
    )
    assert line == "m.go:9: E0115 15:11:04.000000       5] m: boom tb=<\n\ta\n\tb\n\t\n > n=3"
    assert parse_line(line).fields == {"tb": "a\nb\n", "n": 3}


# --- parsing ------------------------------------------------------------------------------


def test_parse_header() -> None:
    line = (
        "allocateddevices.go:189: W0115 15:11:04.407945   18066] scheduler: "
        'Observed device allocation device="d" claim="c"\n'
    )
    parsed = parse_line(line)
    assert (parsed.file, parsed.line, parsed.level) == ("allocateddevices.go", 189, "W")
    assert (parsed.month, parsed.day, parsed.hh, parsed.mm, parsed.ss, parsed.micro) == (
        1,
        15,
        15,
        11,
        4,
        407945,
    )
    assert (parsed.pid, parsed.logger) == (18066, "scheduler")
    assert parsed.message == "Observed device allocation"
    assert parsed.fields == {"device": "d", "claim": "c"}


def test_parse_ambiguity_rule() -> None:
    head = "x.go:1: I0115 15:11:04.000000       1] lg: "
    # The message ends at the first " key=" that starts a valid run of fields.
    assert parse_line(head + "set a=1 done").message == "set"
    assert parse_line(head + "set a=1 done").fields == {"a": Raw("1 done")}
    # Text that cannot start a field stays in the message.
    assert parse_line(head + "ratio 3 = 4 x=1").message == "ratio 3 = 4"
    assert parse_line(head + "a typed value needs a boundary: n=5x").fields == {"n": Raw("5x")}
    # An empty message leaves two spaces before the first field.
    assert parse_line(head + " k=true").message == ""
    assert parse_line(head + " k=true").fields == {"k": True}
    assert parse_line(head + "m dup=1 dup=2").fields == {"dup": 2}


def test_parse_rejects_non_klog_text() -> None:
    with pytest.raises(ValueError, match="not a klog line"):
        parse_line("hello world")
    with pytest.raises(ValueError, match="continues"):
        parse_line("x.go:1: I0115 15:11:04.000000       1] lg: m\nstray")


def test_message_line_break_is_escaped() -> None:
    line = format_event(KlogEvent("x.go", 1, "I", 0.0, 1, "lg", "two\nlines", (("k", 1),)))
    assert "\n" not in line
    assert parse_line(line).message == "two\\nlines"


def test_event_validation() -> None:
    with pytest.raises(ValueError, match="level"):
        KlogEvent("x.go", 1, "D", 0.0, 1, "lg", "m")
    with pytest.raises(ValueError, match="key"):
        KlogEvent("x.go", 1, "I", 0.0, 1, "lg", "m", (("bad key", 1),))


# --- round-trip property ------------------------------------------------------------------

KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,12}", fullmatch=True)
NAME_CHARS = string.ascii_letters + string.digits + "._-/"
VALUES = st.one_of(
    st.text(),
    st.text(min_size=1).map(lambda s: s + "\n" + s),
    st.lists(st.text(max_size=8), min_size=2, max_size=5).map("\n".join),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=4),
    st.lists(st.integers(), max_size=4),
)


@st.composite
def events(draw: st.DrawFn) -> KlogEvent:
    return KlogEvent(
        file=draw(st.text(alphabet=NAME_CHARS, min_size=1, max_size=20)),
        line=draw(st.integers(min_value=0, max_value=10**6)),
        level=draw(st.sampled_from(("I", "W", "E"))),
        time=draw(st.floats(min_value=0, max_value=4e9)),
        pid=draw(st.integers(min_value=0, max_value=10**12)),
        logger=draw(st.text(alphabet=NAME_CHARS, max_size=20)),
        message=draw(
            st.text(
                alphabet=st.characters(exclude_characters="=\n"),
                max_size=40,
            )
        ),
        fields=tuple(draw(st.dictionaries(KEYS, VALUES, max_size=6)).items()),
    )


@settings(max_examples=300, deadline=None, database=None)
@given(events())
def test_round_trip(event: KlogEvent) -> None:
    parsed = parse_line(format_event(event))
    assert isinstance(event.time, float)
    wall = datetime.fromtimestamp(event.time)
    assert (parsed.file, parsed.line, parsed.level, parsed.pid, parsed.logger) == (
        event.file,
        event.line,
        event.level,
        event.pid,
        event.logger,
    )
    assert (parsed.month, parsed.day, parsed.hh, parsed.mm, parsed.ss, parsed.micro) == (
        wall.month,
        wall.day,
        wall.hour,
        wall.minute,
        wall.second,
        wall.microsecond,
    )
    assert parsed.message == event.message
    assert parsed.fields == dict(event.fields)
    for key, value in event.fields:
        assert type(parsed.fields[key]) is type(value)


# --- logging integration ------------------------------------------------------------------


def test_formatter_with_real_logger() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KlogFormatter(tz=UTC))
    logger = logging.getLogger("shmstress.test_klog")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        logger.info("Observed %s allocation", "device", extra={"kv": {"claim": "ns/c", "n": 2}})
        logger.warning("plain")
        logger.debug("low", extra={"kv": {"bad key": True}})
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)

    text = stream.getvalue()
    lines = text.splitlines(keepends=False)
    first = parse_line(lines[0])
    assert first.file == "test_klog.py"
    assert first.level == "I"
    assert first.logger == "shmstress.test_klog"
    assert first.message == "Observed device allocation"
    assert first.fields == {"claim": "ns/c", "n": 2}
    assert first.pid > 0
    assert lines[0].split("] ", 1)[0].endswith(f" {first.pid:>{PID_WIDTH}d}")
    assert parse_line(lines[1]).level == "W"
    assert parse_line(lines[1]).fields == {}
    assert parse_line(lines[2]).fields == {"bad_key": True}

    error_event = "\n".join(lines[3:])
    failed = parse_line(error_event)
    assert failed.level == "E"
    assert failed.message == "failed"
    err = failed.fields["err"]
    assert isinstance(err, str)
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith("RuntimeError: boom")


def test_level_for() -> None:
    assert level_for(logging.DEBUG) == "I"
    assert level_for(logging.INFO) == "I"
    assert level_for(logging.WARNING) == "W"
    assert level_for(logging.ERROR) == "E"
    assert level_for(logging.CRITICAL) == "E"
