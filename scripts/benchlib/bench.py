"""``Bench``: the harness and every group's cases in one object; `scripts/bench` runs a group as ``bench.<group>()``."""
from .away import AwayGroup
from .exec import ExecGroup
from .flaky import FlakyGroup
from .fleet import FleetGroup
from .gateway import GatewayGroup
from .gateway_memory import GatewayMemory
from .harness import Harness
from .headunit import HeadunitGroup
from .limits import LimitsGroup
from .local import LocalGroup
from .s3 import S3Group
from .servers import Servers
from .verify import VerifyGroup


class Bench(LocalGroup, S3Group, HeadunitGroup, AwayGroup, ExecGroup, LimitsGroup, FleetGroup, FlakyGroup,
            GatewayGroup, GatewayMemory, VerifyGroup, Servers, Harness):
    """One method per group (local, s3, headunit, away, exec, limits, fleet, flaky, gateway, verify), each in its module;
    the servers (moto, the fault proxy) and the harness (rows, configs, checks, stopping what was started) shared."""
