# SPDX-License-Identifier: MIT
"""pytest under worldrun: every rank runs the same tests in the same order
(so that they meet in the same barriers and calls), the World is one per
process for the whole session, and results go out as TAP for meson: rank
0 prints every case, the other ranks a "not ok" line for each they fail,
as tests/world's wtap.h has it. Run with -x: the first failure ends that
rank, and worldrun then stops the job, rather than leaving the others to
wait in a barrier it will never reach."""
import os
import sys

import pytest

import world

RANK = int(os.environ.get("WORLD_RANK", "0"))
_count = 0


@pytest.fixture(scope="session")
def w(request):
    the = world.World()
    yield the
    if request.session.testsfailed:
        # The others wait for this rank somewhere: end now, and worldrun
        # stops them, rather than stop() waiting for them to time out.
        sys.stdout.flush()
        os._exit(1)
    try:
        the.stop(timeout=60)
    except world.PeerDeadError:
        # A stop that waits for ranks a test killed: expected there only.
        if not any(getattr(item.module, "PEERS_DIE", False)
                   for item in request.session.items):
            raise


def pytest_runtest_logreport(report):
    global _count
    if report.when != "call" and not (report.when == "setup" and not report.passed):
        return
    _count += 1
    name = report.nodeid.split("::")[-1]
    if report.passed and RANK == 0:
        print(f"ok {_count} - {name}", flush=True)
    elif report.skipped and RANK == 0:
        print(f"ok {_count} - {name} # SKIP {report.longrepr[-1]}", flush=True)
    elif report.failed:
        print(f"not ok {_count} - {name} (rank {RANK})", flush=True)
        for line in str(report.longrepr).splitlines()[-30:]:
            print(f"# {line}", flush=True)


def pytest_sessionfinish(session, exitstatus):
    if RANK == 0:
        print(f"1..{_count}", flush=True)
