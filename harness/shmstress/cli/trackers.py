"""``shmstress list``: every installed tracker with its variants, roles, parameters, invariants."""

from __future__ import annotations

import argparse

from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.plugin import registry


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(sub, "list",
                            description="List every installed tracker (entry point group "
                            "shmstress.trackers): its variants, roles with their default "
                            "worker counts, parameters with their defaults, and invariants.",
                            **with_examples("shmstress list"))
    parser.set_defaults(handler=_cmd_list)


def _cmd_list(args: argparse.Namespace) -> int:
    for name in sorted(registry.available()):
        tracker = registry.load(name)
        print(f"{name}: {tracker.summary}")
        print("  variants:")
        for variant, text in tracker.variants.items():
            print(f"    {variant:18} {text}")
        print("  roles (default count):")
        for role, spec in tracker.roles.items():
            stops = f" (stops after {', '.join(spec.stops_after)})" if spec.stops_after else ""
            print(f"    {role:18} ({spec.count}) {spec.help}{stops}")
        print("  parameters (default):")
        for pname, param in tracker.parameters.items():
            print(f"    {pname:18} ({param.default}) {param.help}")
        print("  invariants:")
        for invariant in tracker.invariants:
            print(f"    {invariant.name:22} {invariant.summary}")
        if tracker.scenarios:
            print("  scenarios (--scenario NAME):")
            for sname, scenario in tracker.scenarios.items():
                print(f"    {sname:18} {scenario.help}")
    return 0
