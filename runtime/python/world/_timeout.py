# SPDX-License-Identifier: MIT
"""Timeouts as the world package takes them (seconds) and as libworld does
(milliseconds)."""
import math
from typing import Optional

from . import _world

#: A timeout that never ends.
FOREVER = math.inf


def _ms(timeout: Optional[float]) -> int:
    """Seconds (None or a negative number: the default) as libworld's ms."""
    if timeout is None or timeout < 0:
        return _world.TIMEOUT_DEFAULT
    if timeout == FOREVER:
        return _world.TIMEOUT_FOREVER
    return min(int(math.ceil(timeout * 1000)), 2**31 - 1)
