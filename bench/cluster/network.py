"""Hosts on one machine: a Linux network namespace per host, each joined by a veth link to
a bridge in a namespace of its own (the switch). Every address lives inside namespaces
created here; `remove` deletes them all (and their links with them).

    net = Network.create(["db", "web-1", ...]); net.address("db") -> "10.231.x.11"
    net.run_in("db") -> ["ip", "netns", "exec", "<ns>"]   (a command prefix)
    net.cut("worker-1") / net.mend("worker-1")            (its switch port down / up)
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"


def unavailable() -> str | None:
    """Why this machine cannot run the cluster drill, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (run as root)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"pcprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@dataclass
class Network:
    prefix: str  # unique per run: namespaces and links are named after it
    subnet: str  # the first three octets, e.g. "10.231.17"
    hosts: dict[str, int] = field(default_factory=dict)  # host -> index (address, link)

    @classmethod
    def create(cls, names: list[str]) -> Network:
        run = os.getpid() % 10000
        net = cls(prefix=f"pc{run:04d}", subnet=f"10.231.{run % 250}")
        try:
            _ip("netns", "add", net.ns("switch"))
            _ip("-n", net.ns("switch"), "link", "add", "br0", "type", "bridge")
            _ip("-n", net.ns("switch"), "link", "set", "br0", "up")
            for name in names:
                net.add(name)
        except BaseException:
            net.remove()
            raise
        return net

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def add(self, host: str) -> None:
        index = len(self.hosts) + 1
        self.hosts[host] = index
        inside, port = f"{self.prefix}h{index}", f"{self.prefix}s{index}"
        _ip("netns", "add", self.ns(host))
        _ip("link", "add", inside, "type", "veth", "peer", "name", port)
        _ip("link", "set", inside, "netns", self.ns(host))
        _ip("link", "set", port, "netns", self.ns("switch"))
        _ip("-n", self.ns(host), "link", "set", inside, "name", "eth0")
        _ip("-n", self.ns(host), "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
        _ip("-n", self.ns(host), "link", "set", "eth0", "up")
        _ip("-n", self.ns(host), "link", "set", "lo", "up")
        _ip("-n", self.ns("switch"), "link", "set", port, "master", "br0", "up")

    def address(self, host: str) -> str:
        return f"{self.subnet}.{10 + self.hosts[host]}"

    def run_in(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(host)]

    def cut(self, host: str) -> None:
        """The host's cable pulled: its packets go nowhere (no reset, no error)."""
        _ip("-n", self.ns("switch"), "link", "set", f"{self.prefix}s{self.hosts[host]}", "down")

    def mend(self, host: str) -> None:
        _ip("-n", self.ns("switch"), "link", "set", f"{self.prefix}s{self.hosts[host]}", "up")

    def enter(self, host: str) -> None:
        """Move this process into the host's namespace (call before starting any thread)."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"{NETNS_DIR}/{self.ns(host)}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {self.ns(host)} failed")
        finally:
            os.close(fd)

    def remove(self) -> None:
        for host in [*self.hosts, "switch"]:
            subprocess.run(["ip", "netns", "del", self.ns(host)], capture_output=True)
