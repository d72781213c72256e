"""Two hosts on this machine: two network namespaces joined by a veth pair, each with a
host name of its own (a UTS namespace) that both resolve (an /etc/hosts of their own,
bind-mounted in a mount namespace). Addresses only inside those namespaces, in the
private /30 10.231.0.0/30. Everything made is removed on every way out."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ADDRESSES = ("10.231.0.1", "10.231.0.2")
NAMES = ("host-a", "host-b")


@dataclass(frozen=True)
class Host:
    netns: str
    ifname: str
    address: str
    name: str


def why_not() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 util-linux)"
    probe = f"pkprobe{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@contextlib.contextmanager
def two_hosts(tmp: Path, rate_mbit: int | None = None, tcp_retries2: int | None = None
              ) -> Iterator[tuple[Host, Host]]:
    """``rate_mbit``: the link's bandwidth, each way (a token bucket; this kernel has
    no netem to add delay). ``tcp_retries2``: how many times the hosts' kernels resend
    unanswered data before giving a connection up (15 by default, about 15 minutes; 6
    is about 25 s): what bounds a wait on a connection whose link went down."""
    tag = uuid.uuid4().hex[:6]
    hosts = tuple(Host(f"pk{side}{tag}", f"pk{side}{tag}", addr, name)
                  for side, addr, name in zip("ab", ADDRESSES, NAMES, strict=True))
    made: list[str] = []
    try:
        for h in hosts:
            _ip("netns", "add", h.netns)
            made.append(h.netns)
        _ip("link", "add", hosts[0].ifname, "type", "veth", "peer", "name", hosts[1].ifname)
        hosts_file = tmp / "hosts"
        hosts_file.write_text("127.0.0.1 localhost\n"
                              + "".join(f"{h.address} {h.name}\n" for h in hosts))
        for h in hosts:
            _ip("link", "set", h.ifname, "netns", h.netns)
            _ip("-n", h.netns, "addr", "add", f"{h.address}/30", "dev", h.ifname)
            _ip("-n", h.netns, "link", "set", "lo", "up")
            _ip("-n", h.netns, "link", "set", h.ifname, "up")
            if tcp_retries2 is not None:
                subprocess.run(["ip", "netns", "exec", h.netns, "sysctl", "-q", "-w",
                                f"net.ipv4.tcp_retries2={tcp_retries2}"],
                               check=True, capture_output=True, timeout=20)
            if rate_mbit:
                subprocess.run(["ip", "netns", "exec", h.netns, "tc", "qdisc", "add", "dev",
                                h.ifname, "root", "tbf", "rate", f"{rate_mbit}mbit", "burst",
                                "256kb", "latency", "100ms"],
                               check=True, capture_output=True, timeout=20)
        yield hosts  # type: ignore[misc]
    finally:
        for ns in made:  # the veth pair goes with its namespaces
            kill_host(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def link_down(host: Host) -> None:
    """``host``'s end of the link down (its processes go on; its peer loses the carrier)."""
    _ip("-n", host.netns, "link", "set", host.ifname, "down")


def kill_host(netns: str) -> list[int]:
    """SIGKILL every process in the namespace ``netns`` (torchrun's workers run in sessions
    of their own, out of reach of :func:`stop`): the host is gone. The pids killed."""
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True,
                            timeout=20)
    pids = [int(p) for p in listed.stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def stopped_in(netns: str) -> list[int]:
    """The processes in the namespace ``netns`` that are stopped (SIGSTOP)."""
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True,
                            timeout=20)
    found = []
    for pid in listed.stdout.split():
        with contextlib.suppress(OSError):
            # the state follows the command's closing parenthesis: "pid (comm) T ..."
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "T":
                found.append(int(pid))
    return found


def start_on(host: Host, hosts_file: Path, argv: list[str], log: Path,
             env: dict[str, str] | None = None, private: Path | None = None
             ) -> subprocess.Popen:
    """``argv`` on ``host`` (its own network, host name and /etc/hosts), in a process
    group of its own, output to ``log``; ``private``: a folder this host sees empty and
    of its own (a tmpfs in its mount namespace), as a disk the hosts do not share."""
    own = (f"mkdir -p {private} && mount -t tmpfs -o size=256m tmpfs {private} && "
           if private else "")
    script = (f"mount --bind {hosts_file} /etc/hosts && {own}hostname {host.name} && "
              'exec "$@"')
    cmd = ["ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount", "sh", "-c",
           script, "sh", *argv]
    full_env = {**os.environ, "GLOO_SOCKET_IFNAME": host.ifname, "COLUMNS": "120",
                **(env or {})}
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    """End ``proc`` and everything in its process group (started by :func:`start_on`)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
